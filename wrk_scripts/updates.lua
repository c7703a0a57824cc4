-- test "updates" (the database suite): GET /updates/?n=N: N rows read and written.
-- The server draws the ids, so every request is the same: a pool of one request.
-- usage: wrk ... -s updates.lua <base url> -- <token> <seed> [pool] n=N
-- common.lua sits next to this script; wrk loads a script by the path it was given
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

common.install(function(c) return requests.updates(c, c.n) end, nil, 1)
