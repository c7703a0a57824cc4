-- test "static" (bench.core.workloads; servers/README.md, "The HTTP workloads"): every
-- request the same, so each thread's pool holds one.
-- usage: wrk ... -s static.lua <base url> -- <token> <seed> [pool] size=1k|64k|1m
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

common.install(requests.static, nil, 1)
