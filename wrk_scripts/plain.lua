-- test "plain": GET /plain/?param1=..&param2=..&param3=.. with random ASCII
-- letters/digits (4-12 chars each; no URL-encoding needed).
-- usage: wrk ... -s plain.lua <base url> -- <token> <seed> [pool]
-- common.lua sits next to this script; wrk loads a script by the path it was given
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

common.install(requests.plain)
