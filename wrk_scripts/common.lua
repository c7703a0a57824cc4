-- Shared code for the benchmark's wrk scripts (wrk 4.1, LuaJIT).
--
-- Each test script does
--     local common = require("common")      (with the script's folder on package.path)
--     common.install(function(c) return method, path, body[, content type[, key]] end)
-- which defines wrk's global hooks setup(), init(), request() and done(). The builders
-- of the contract's tests are in requests.lua. A builder that returns a key (mixed.lua:
-- the endpoint it drew) has its requests counted per key, in done()'s `endpoints`.
-- response() is deliberately NOT defined: defining it makes wrk hand every
-- response to Lua, which costs client CPU that the server would otherwise get.
--
-- Script arguments (after `--` on the wrk command line):  <token> <seed> [pool] [n=N] [mix=M]
--   token  value of the `token` header carried by every request
--   seed   run seed; wrk thread i (1-based) seeds its RNG with seed * 1000 + i
--   pool   optional: number of pre-formatted requests per thread, cycled; 0 = build
--          every request afresh. The DB tests default to 0 so that ids stay uniform
--          over the whole table (a cycled pool of 1000 would only ever touch ~1000
--          rows); plain / to json default to a pool, keeping the client cheap where
--          it is most likely to be the bottleneck.
--   n=N    the database suite's rows per request (queries, updates, cached)
--   mix=M  mixed.lua's weighted endpoints, e.g. get_user:60,queries.5:10
--   size=S the static test's file or the upload test's body: 1k, 64k or 1m
--   pipeline=D  D requests per request() call, written at once (pipelined.lua): wrk
--          counts the requests in the batch it checks before the run and writes the next
--          batch when all D answers are in; `sent` counts requests, not batches
--
-- done() prints exactly one machine-readable line to stdout:
--     WRK_JSON {...}
-- (times in microseconds, exactly as wrk records them), including every non-zero
-- counter of wrk's latency distribution (latency_counts).

local M = {}

M.ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
M.depth = 1        -- requests per request() call (pipeline=D)
local ALNUM_LEN = #M.ALNUM
local DEFAULT_POOL = 1000

-- random ASCII letters/digits; length uniform in [min_len, max_len]
function M.random_alnum(min_len, max_len)
   local n = math.random(min_len, max_len)
   local out = {}
   for i = 1, n do
      local k = math.random(1, ALNUM_LEN)
      out[i] = M.ALNUM:sub(k, k)
   end
   return table.concat(out)
end

---------------------------------------------------------------------------
-- A tiny JSON encoder (enough for numbers, strings, booleans, arrays, maps).
---------------------------------------------------------------------------
local escapes = {
   ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f',
   ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t',
}

local function encode_string(s)
   return '"' .. s:gsub('[%c"\\]', function(c)
      return escapes[c] or string.format("\\u%04x", c:byte())
   end) .. '"'
end

local function encode_number(n)
   if n ~= n or n == math.huge or n == -math.huge then
      return "null"                      -- NaN / inf are not JSON
   end
   if n == math.floor(n) and math.abs(n) < 2^53 then
      return string.format("%d", n)
   end
   return string.format("%.17g", n)
end

local function is_array(t)
   local n = 0
   for k in pairs(t) do
      if type(k) ~= "number" or k < 1 or k ~= math.floor(k) then return false end
      n = n + 1
   end
   return n == #t
end

-- explicit JSON null (a nil value would just drop the key)
M.null = setmetatable({}, { __tostring = function() return "null" end })

local encode

encode = function(v)
   local tv = type(v)
   if tv == "nil" or v == M.null then return "null"
   elseif tv == "boolean" then return v and "true" or "false"
   elseif tv == "number" then return encode_number(v)
   elseif tv == "string" then return encode_string(v)
   elseif tv == "table" then
      local parts = {}
      if next(v) ~= nil and is_array(v) then
         for i = 1, #v do parts[i] = encode(v[i]) end
         return "[" .. table.concat(parts, ",") .. "]"
      end
      local keys = {}
      for k in pairs(v) do keys[#keys + 1] = tostring(k) end
      table.sort(keys)
      for i, k in ipairs(keys) do
         local val = v[k]
         if val == nil then val = v[tonumber(k)] end
         parts[i] = encode_string(k) .. ":" .. encode(val)
      end
      return "{" .. table.concat(parts, ",") .. "}"
   end
   error("cannot JSON-encode a " .. tv)
end
M.json_encode = encode

---------------------------------------------------------------------------
-- Request formatting (like wrk.format, but with a deterministic header order).
---------------------------------------------------------------------------

-- "Name: value\r\n" lines: Host first, then the others sorted by name
function M.header_block(headers)
   local names = {}
   for k in pairs(headers) do
      if k ~= "Host" and k:lower() ~= "content-length" then names[#names + 1] = k end
   end
   table.sort(names)
   local lines = {}
   if headers["Host"] then lines[1] = "Host: " .. headers["Host"] .. "\r\n" end
   for _, k in ipairs(names) do lines[#lines + 1] = k .. ": " .. headers[k] .. "\r\n" end
   return table.concat(lines)
end

function M.format(method, path, head, body)
   if body then
      return method .. " " .. path .. " HTTP/1.1\r\n" .. head ..
             "Content-Length: " .. #body .. "\r\n\r\n" .. body
   end
   return method .. " " .. path .. " HTTP/1.1\r\n" .. head .. "\r\n"
end

---------------------------------------------------------------------------
-- wrk's whole latency distribution, for done().
---------------------------------------------------------------------------
-- wrk 4.x keeps one counter per microsecond from 0 to its --timeout (src/stats.c,
-- stats_alloc(timeout): data[us] = requests that took us microseconds, after its own
-- coordinated-omission correction, stats_correct). Lua sees it through `latency(i)`
-- (the i-th non-zero counter: value, count) and `#latency` (how many are non-zero), but
-- each latency(i) scans the array from the minimum (stats_value_at), so walking every
-- counter that way is quadratic: seconds to minutes for a slow tail under a 10 s
-- timeout. LuaJIT's FFI reads the same array in one linear pass instead. The layout
-- (count, limit, min, max, data[]) is wrk 4.x's `stats` struct; it is checked against
-- what wrk itself reports (min, max, the non-zero count) before anything is trusted, and
-- without the FFI or on a mismatch the slow walk runs under a time budget.
M.HISTOGRAM_BUDGET_S = 5      -- the slow walk gives up (histogram null) after this long

local ffi_ok, ffi = pcall(require, "ffi")
if ffi_ok then
   ffi_ok = pcall(ffi.cdef, [[
      typedef struct { uint64_t count, limit, min, max; } bench_wrk_stats_head;
   ]])
end

-- "delta:count,delta:count,...": the value (us) as the step from the previous non-zero
-- value (the first from 0), and its count; short because most steps are 1
local function encode_counts(values, counts, n)
   local parts, previous = {}, 0
   for i = 1, n do
      parts[i] = string.format("%d:%d", values[i] - previous, counts[i])
      previous = values[i]
   end
   return table.concat(parts, ",")
end

local function counts_by_ffi(latency)
   if not ffi_ok then return nil, "no LuaJIT FFI" end
   local ok, head = pcall(function()
      return ffi.cast("bench_wrk_stats_head **", latency)[0]
   end)
   if not ok or head == nil then return nil, "cannot read wrk's stats" end
   local lo, hi, limit = tonumber(head.min), tonumber(head.max), tonumber(head.limit)
   if lo ~= latency.min or hi ~= latency.max or hi >= limit then
      return nil, "wrk's stats layout is not the one expected"
   end
   local data = ffi.cast("uint64_t *", head + 1)
   local values, counts, n = {}, {}, 0
   for v = lo, hi do
      local c = data[v]
      if c ~= 0 then
         n = n + 1
         values[n], counts[n] = v, tonumber(c)
      end
   end
   if n ~= #latency then return nil, "wrk's stats layout is not the one expected" end
   return values, counts, n
end

local function counts_by_walk(latency)
   local values, counts, n = {}, {}, #latency
   local deadline = os.clock() + M.HISTOGRAM_BUDGET_S
   for i = 1, n do
      values[i], counts[i] = latency(i)
      if os.clock() > deadline then
         return nil, string.format("reading wrk's %d latency counters took over %d s",
                                   n, M.HISTOGRAM_BUDGET_S)
      end
   end
   return values, counts, n
end

-- {counts = "delta:count,...", read = "ffi"|"walk"} or {error = why}
function M.latency_counts(latency)
   if latency.min > latency.max then return { counts = "", read = "none" } end
   local values, counts, n = counts_by_ffi(latency)
   local read, why = "ffi", counts
   if values == nil then
      values, counts, n = counts_by_walk(latency)
      read = "walk"
      if values == nil then return { error = counts, ffi_error = why } end
   end
   return { counts = encode_counts(values, counts, n), read = read }
end

---------------------------------------------------------------------------
-- The wrk hooks.
---------------------------------------------------------------------------

-- build(c) -> method, path, body-or-nil[, content type[, key]]  (called pool times per
-- thread in init, or once per request when the pool size is 0); content_type: the
-- Content-Type of every request whose builder names none
function M.install(build, content_type, default_pool)
   -- main Lua state: setup() runs here once per thread, then done()
   local threads = {}

   function setup(thread)
      threads[#threads + 1] = thread
      thread:set("index", #threads)
   end

   -- thread Lua states: init() then request() for every request
   local pool, pool_size, cursor, live = nil, 0, 0, false
   local keys = {}            -- the key of each pooled request (nil: not counted)
   local headers, heads = nil, {}
   sent = 0   -- global so that done() can read it with thread:get("sent")
   endpoint_sent = {}   -- key -> requests, global for done() too (builders with keys)

   -- the header block for a content type (nil: none), made once per type
   local function head_for(ct)
      local head = heads[ct or ""]
      if head == nil then
         local with = {}
         for k, v in pairs(headers) do with[k] = v end
         with["Content-Type"] = ct
         head = M.header_block(with)
         heads[ct or ""] = head
      end
      return head
   end

   local function make_one()
      local method, path, body, ct, key = build(M)
      return M.format(method, path, head_for(ct or content_type), body), key
   end

   -- one request, or a batch of M.depth of them (keys are not kept for a batch: the
   -- builders that name keys, mixed.lua's, never pipeline)
   local function make()
      if M.depth == 1 then return make_one() end
      local batch = {}
      for i = 1, M.depth do batch[i] = make_one() end
      return table.concat(batch)
   end

   local function counted(req, key)
      if key ~= nil then endpoint_sent[key] = (endpoint_sent[key] or 0) + 1 end
      return req
   end

   function init(args)
      local token = args[1]
      local seed = tonumber(args[2])
      if token == nil or seed == nil then
         error("usage: wrk ... -s <script> <url> -- <token> <seed> [pool]")
      end
      pool_size = tonumber(args[3]) or default_pool or DEFAULT_POOL
      for i = 3, #args do
         local n = args[i]:match("^n=(%d+)$")
         if n then M.n = tonumber(n) end
         M.mix = args[i]:match("^mix=(.+)$") or M.mix
         local depth = args[i]:match("^pipeline=(%d+)$")
         if depth then M.depth = tonumber(depth) end
         M.size = args[i]:match("^size=(%w+)$") or M.size
      end
      local idx = tonumber(index) or 1
      math.randomseed(seed * 1000 + idx)

      -- the headers: wrk.headers (Host, any -H) plus our token and content type,
      -- in a fixed order (Host first, then sorted) so that a seed gives the same bytes
      headers = {}
      for k, v in pairs(wrk.headers) do headers[k] = v end
      headers["token"] = token

      -- live mode (pool 0) still pre-builds the first requests when dumping, and
      -- serves them first: the stream is the same as without the dump
      local dump = os.getenv("BENCH_WRK_DUMP_DIR")
      live = pool_size == 0
      local prefill = pool_size
      if live then prefill = (dump and dump ~= "") and DEFAULT_POOL or 0 end
      pool = {}
      for i = 1, prefill do pool[i], keys[i] = make() end
      cursor = 0

      -- debugging/tests: dump this thread's requests to $BENCH_WRK_DUMP_DIR/thread<i>.txt
      if dump and dump ~= "" then
         local f = assert(io.open(dump .. "/thread" .. idx .. ".txt", "wb"))
         for i = 1, prefill do f:write(pool[i], "\n=====\n") end
         f:close()
      end
   end

   function request()
      sent = sent + M.depth
      if live and cursor >= #pool then return counted(make()) end
      cursor = cursor + 1
      if cursor > pool_size and not live then cursor = 1 end
      return counted(pool[cursor], keys[cursor])
   end

   function done(summary, latency, requests)
      local e = summary.errors
      local have = summary.requests > 0 and latency.max > 0 and latency.min <= latency.max
      local function stat(v) if have then return v else return M.null end end
      local per_thread, endpoints = {}, nil
      for i, t in ipairs(threads) do
         per_thread[i] = { index = i, sent = tonumber(t:get("sent")) or 0 }
         for key, count in pairs(t:get("endpoint_sent") or {}) do
            endpoints = endpoints or {}
            endpoints[key] = (endpoints[key] or 0) + count
         end
      end
      local have_rps = requests.min <= requests.max
      local out = {
         duration_us = summary.duration,
         requests = summary.requests,
         bytes = summary.bytes,
         errors = {
            connect = e.connect, read = e.read, write = e.write,
            status = e.status, timeout = e.timeout,
         },
         latency_us = {
            min = stat(latency.min), max = stat(latency.max),
            mean = stat(latency.mean), stdev = stat(latency.stdev),
            p50 = stat(latency:percentile(50)), p75 = stat(latency:percentile(75)),
            p90 = stat(latency:percentile(90)), p99 = stat(latency:percentile(99)),
            p99_9 = stat(latency:percentile(99.9)),
         },
         -- wrk samples each thread's request rate every 100 ms (requests/s)
         thread_rps = {
            min = have_rps and requests.min or M.null,
            max = have_rps and requests.max or M.null,
            mean = have_rps and requests.mean or M.null,
            stdev = have_rps and requests.stdev or M.null,
         },
         threads = per_thread,
         -- requests handed to wrk per key (a builder that returns keys: mixed.lua)
         endpoints = endpoints,
         -- every non-zero per-microsecond counter of wrk's latency (see latency_counts)
         latency_counts = M.latency_counts(latency),
      }
      io.write("WRK_JSON ", encode(out), "\n")
      io.flush()
   end
end

return M
