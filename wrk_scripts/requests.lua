-- The requests of each contract test, one builder per test: (c, n) -> method, path, body,
-- content type. c is common.lua's module (random_alnum); n the database suite's rows per
-- request. The per-test scripts install one builder each, mixed.lua draws among them.
-- Every id and parameter is drawn from math.random, which common.lua seeds per thread.
local R = {}

local JSON = "application/json"

function R.get_user(c)
   return "GET", "/user/" .. math.random(1, 10000) .. "/", nil, nil
end

function R.update_user(c)
   local id = math.random(1, 10000)
   local body = '{"username": "' .. c.random_alnum(8, 16) ..
                '", "email": "' .. c.random_alnum(8, 16) .. '@example.com"}'
   return "PATCH", "/user/" .. id .. "/", body, JSON
end

local function params(c, endpoint)
   return "GET", endpoint .. "?param1=" .. c.random_alnum(4, 12) ..
                 "&param2=" .. c.random_alnum(4, 12) ..
                 "&param3=" .. c.random_alnum(4, 12), nil, nil
end

function R.plain(c) return params(c, "/plain/") end
function R.to_json(c) return params(c, "/to_json/") end

-- the database suite's: the server draws the ids, so a request depends on n alone
local function with_n(endpoint, test)
   return function(c, n)
      if n == nil then
         error("usage: wrk ... -s " .. test .. ".lua <url> -- <token> <seed> [pool] n=N")
      end
      return "GET", endpoint .. "?n=" .. n, nil, nil
   end
end

R.queries = with_n("/queries/", "queries")
R.updates = with_n("/updates/", "updates")
R.cached = with_n("/cached/", "cached")

function R.fortunes(c) return "GET", "/fortunes/", nil, nil end

-- the HTTP workloads (bench.core.workloads): a file or a body of size=S (1k, 64k, 1m)
local SIZE_BYTES = { ["1k"] = 1024, ["64k"] = 64 * 1024, ["1m"] = 1024 * 1024 }

local function size_of(c, test)
   local bytes = SIZE_BYTES[c.size or ""]
   if bytes == nil then
      error("usage: wrk ... -s " .. test .. ".lua <url> -- <token> <seed> [pool] size=1k|64k|1m")
   end
   return bytes
end

function R.static(c)
   size_of(c, "static")
   return "GET", "/static/" .. c.size .. ".txt", nil, nil
end

-- one body per thread, made once: every request of a sample sends the same bytes (the
-- server's work does not depend on them), and the script's pool holds one request
local bodies = {}
function R.upload(c)
   local bytes = size_of(c, "upload")
   if bodies[bytes] == nil then bodies[bytes] = c.random_alnum(bytes, bytes) end
   return "POST", "/upload/", bodies[bytes], "application/octet-stream"
end

function R.delay(c) return "GET", "/delay/", nil, nil end

return R
