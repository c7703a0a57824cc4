-- test "pipelined": plain's requests (GET /plain/ with three random ASCII params), D of
-- them written at once on each connection, the next D when all D answers are in: HTTP/1.1
-- pipelining as TechEmpower's plaintext measured it (bench.core.pipelining).
-- usage: wrk ... -s pipelined.lua <base url> -- <token> <seed> [pool] pipeline=D
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

common.install(requests.plain)
