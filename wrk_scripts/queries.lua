-- test "queries" (the database suite): GET /queries/?n=N: N rows, each read with its own SELECT.
-- The server draws the ids, so every request is the same: a pool of one request.
-- usage: wrk ... -s queries.lua <base url> -- <token> <seed> [pool] n=N
-- common.lua sits next to this script; wrk loads a script by the path it was given
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

common.install(function(c) return requests.queries(c, c.n) end, nil, 1)
