-- test "fortunes" (the database suite): GET /fortunes/: the fortune table as an HTML page.
-- The server draws the ids, so every request is the same: a pool of one request.
-- usage: wrk ... -s fortunes.lua <base url> -- <token> <seed> [pool]
-- common.lua sits next to this script; wrk loads a script by the path it was given
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

common.install(requests.fortunes, nil, 1)
