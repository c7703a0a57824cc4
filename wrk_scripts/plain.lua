-- test "plain": GET /plain/?param1=..&param2=..&param3=.. with random ASCII
-- letters/digits (4-12 chars each; no URL-encoding needed).
-- usage: wrk ... -s plain.lua <base url> -- <token> <seed> [pool]
-- Find common.lua: $BENCH_WRK_SCRIPTS_DIR (set by bench/load.py), else the
-- directory of this script (wrk loads it with luaL_dofile, so the chunk name is
-- "@<path as given on the command line>").
local function scripts_dir()
   local d = os.getenv("BENCH_WRK_SCRIPTS_DIR")
   if d and d ~= "" then return d end
   local src = debug.getinfo(1, "S").source
   if src:sub(1, 1) == "@" then return src:sub(2):match("^(.*)/[^/]*$") or "." end
   return "."
end
local common = dofile(scripts_dir() .. "/common.lua")

common.install(function(c)
   return "GET", "/plain/?param1=" .. c.random_alnum(4, 12) ..
                 "&param2=" .. c.random_alnum(4, 12) ..
                 "&param3=" .. c.random_alnum(4, 12), nil
end)
