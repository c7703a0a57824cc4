-- test "update user": PATCH /user/{id}/, id uniform in 1..10000, JSON body with
-- a random ASCII username (8-16 letters/digits) and a random @example.com email.
-- usage: wrk ... -s update_user.lua <base url> -- <token> <seed> [pool]
-- common.lua sits next to this script; wrk loads a script by the path it was given
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

common.install(requests.update_user, nil, 0)
