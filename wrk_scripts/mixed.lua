-- test "mixed": every request's endpoint drawn by weight from the mix the harness passes
-- (bench.core.mix: a profile such as mixes/small-api.toml), each built as its own test's
-- script builds it (requests.lua). The draws come from the thread's seeded math.random, so
-- a seed gives the same stream; done() reports the requests each endpoint got
-- (`endpoints`, by key), which the harness holds against the weights.
-- usage: wrk ... -s mixed.lua <base url> -- <token> <seed> [pool] mix=get_user:60,queries.5:10,...
--   each item KEY:WEIGHT: KEY a test of requests.lua with "_" for spaces, ".N" for its n
-- common.lua sits next to this script; wrk loads a script by the path it was given
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
package.path = here .. "?.lua;" .. package.path
local common = require("common")
local requests = require("requests")

local USAGE = "usage: wrk ... -s mixed.lua <url> -- <token> <seed> [pool] mix=KEY:WEIGHT,..."

-- "get_user:60,queries.5:10" -> endpoints {key, build, n, upto}, total weight
local function parse(text)
   if text == nil then error(USAGE) end
   local endpoints, total = {}, 0
   for item in text:gmatch("[^,]+") do
      local key, weight = item:match("^([%w_%.]+):(%d+)$")
      local test, n = (key or ""):match("^([%a_]+)%.?(%d*)$")
      local build = test and requests[test]
      if build == nil or tonumber(weight) < 1 then
         error("mixed.lua: cannot read " .. item .. " of mix=" .. text .. "; " .. USAGE)
      end
      total = total + tonumber(weight)
      endpoints[#endpoints + 1] = { key = key, build = build, n = tonumber(n), upto = total }
   end
   if total == 0 then error("mixed.lua: an empty mix; " .. USAGE) end
   return endpoints, total
end

local endpoints, total

common.install(function(c)
   if endpoints == nil then endpoints, total = parse(c.mix) end
   local draw, e = math.random(1, total), nil
   for i = 1, #endpoints do
      e = endpoints[i]
      if draw <= e.upto then break end
   end
   local method, path, body, ct = e.build(c, e.n)
   return method, path, body, ct, e.key
end, nil, 0)
