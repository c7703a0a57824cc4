-- test "update user": PATCH /user/{id}/, id uniform in 1..10000, JSON body with
-- a random ASCII username (8-16 letters/digits) and a random @example.com email.
-- usage: wrk ... -s update_user.lua <base url> -- <token> <seed> [pool]
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
   local id = math.random(1, 10000)
   local body = '{"username": "' .. c.random_alnum(8, 16) ..
                '", "email": "' .. c.random_alnum(8, 16) .. '@example.com"}'
   return "PATCH", "/user/" .. id .. "/", body
end, "application/json", 0)
