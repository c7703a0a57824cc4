-- test "get user": GET /user/{id}/, id uniform in 1..10000.
-- usage: wrk ... -s get_user.lua <base url> -- <token> <seed> [pool]
-- common.lua sits next to this script; wrk loads a script by the path it was given
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

common.install(requests.get_user, nil, 0)
