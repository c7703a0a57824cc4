-- test "delay" (bench.core.workloads; servers/README.md, "The HTTP workloads"): every
-- request the same, so each thread's pool holds one.
-- usage: wrk ... -s delay.lua <base url> -- <token> <seed> [pool]
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

common.install(requests.delay, nil, 1)
