-- test "update user": PATCH /user/{id}/, id uniform in 1..10000, JSON body with
-- a random ASCII username (8-16 letters/digits) and a random @example.com email.
-- usage: wrk ... -s update_user.lua <base url> -- <token> <seed> [pool]
-- common.lua sits next to this script; wrk loads a script by the path it was given
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")

common.install(function(c)
   local id = math.random(1, 10000)
   local body = '{"username": "' .. c.random_alnum(8, 16) ..
                '", "email": "' .. c.random_alnum(8, 16) .. '@example.com"}'
   return "PATCH", "/user/" .. id .. "/", body
end, "application/json", 0)
