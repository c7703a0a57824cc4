// Shared code of the benchmark's k6 scripts (k6 v1.x): the same request streams as
// wrk_scripts/*.lua, one request per iteration.
//
// Each test script does
//     import { install } from './common.js';
//     const t = install((c) => [method, path, body], { contentType, pool });
//     export const options = t.options;
//     export default t.iteration;
//     export const handleSummary = t.handleSummary;
// A build function may also return a fourth element, the request's kind
// { contentType, tag }: its Content-Type instead of install's, and the k6 tag
// `endpoint: tag` on its metrics (mixed.js: the endpoint it drew). REQUESTS has the
// contract tests' requests by the key a mix names them with.
//
// Everything a run varies comes from the environment (`k6 run -e NAME=value`), written by
// bench/load/k6.py:
//   BENCH_BASE_URL  e.g. http://127.0.0.1:18180 (no trailing slash)
//   BENCH_TOKEN     value of the `token` header carried by every request
//   BENCH_SEED      run seed; VU i seeds its generator with seed * 1000 + i (wrk: thread i)
//   BENCH_N         the database suite's rows per request (queries, updates, cached)
//   BENCH_MIX       mixed.js's weighted endpoints, e.g. get_user:60,queries.5:10,fortunes:5
//   BENCH_POOL      pre-built requests per VU, cycled; 0 = every request built afresh
//                   (the same defaults as the Lua scripts: 1000 for plain / to json,
//                   0 for the user tests, 1 for the suite)
//   BENCH_TIMEOUT   per-request timeout, seconds
//   BENCH_CLOSE     "1": `Connection: close` on every request and a new TCP connection
//                   each (k6's noConnectionReuse: Go's transport sends the header itself)
//   BENCH_TLS13     "1": https, TLS 1.3 only (the run's one version); the certificate is
//                   verified against the run's CA (SSL_CERT_FILE, set by k6.py)
//   closed model:   BENCH_VUS, BENCH_DURATION (seconds), BENCH_ITERATIONS (optional:
//                   shared-iterations with the duration as maxDuration)
//   open model:     BENCH_RATE (iterations per BENCH_TIME_UNIT seconds), BENCH_VUS as
//                   preAllocatedVUs, BENCH_MAX_VUS, BENCH_DURATION
//
// A request that got no answer (status 0) is counted in bench_error_<kind> by its k6
// error code, a 4xx/5xx answer in bench_error_status; no counter is touched for a good
// answer, so the common path costs nothing beyond the request. handleSummary prints one
// machine-readable line to stdout, `K6_JSON {...}` (k6's summary data), which is all
// bench/load/k6.py parses.
import http from 'k6/http';
import { Counter } from 'k6/metrics';

const ALNUM = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
export const ERROR_KINDS = ['connect', 'read', 'write', 'timeout', 'lost', 'status'];
export const counters = {};
for (const kind of ERROR_KINDS) counters[kind] = new Counter('bench_error_' + kind);
// answers over another protocol than HTTP/1.1 (never a silent fall-back or upgrade)
const otherProtocol = new Counter('bench_other_protocol');

// k6's error codes (docs: "Error codes") -> the wrk error kind closest to each
export function errorKind(code) {
  if (code === 1050) return 'timeout';                     // request timeout
  if (code >= 1100 && code < 1200) return 'connect';       // DNS
  if (code >= 1210 && code < 1220) return 'connect';       // dial: refused, timeout, ...
  if (code === 1201 || code === 1202) return 'write';      // broken pipe / write error
  if (code === 1220 || code === 1200 || code === 1000 ||   // reset by peer, tcp, generic
      code === 1010 || (code >= 1600 && code < 1700)) return 'read';   // HTTP/1 framing
  return 'lost';
}

// mulberry32: a small seeded generator (k6's Math.random cannot be seeded)
function rng(seed) {
  let a = seed >>> 0;
  return function () {
    a = (a + 0x6D2B79F5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// The requests of the contract's tests, by the key a mix names each (bench/core/mix.py,
// Endpoint.key), as the per-test scripts build them: build(c, n) -> [method, path, body],
// n the database suite's rows per request; contentType that of every request it builds.
function withParams(c, endpoint) {
  return ['GET', endpoint + '?param1=' + c.random_alnum(4, 12) +
                 '&param2=' + c.random_alnum(4, 12) +
                 '&param3=' + c.random_alnum(4, 12), null];
}

export const REQUESTS = {
  get_user: { build: (c) => ['GET', '/user/' + c.randint(1, 10000) + '/', null] },
  update_user: {
    build: (c) => {
      const id = c.randint(1, 10000);
      const body = '{"username": "' + c.random_alnum(8, 16) +
                   '", "email": "' + c.random_alnum(8, 16) + '@example.com"}';
      return ['PATCH', '/user/' + id + '/', body];
    },
    contentType: 'application/json',
  },
  plain: { build: (c) => withParams(c, '/plain/') },
  to_json: { build: (c) => withParams(c, '/to_json/') },
  // the database suite's: the server draws the ids, so a request depends on n alone
  queries: { build: (c, n) => ['GET', '/queries/?n=' + n, null], takesN: true },
  updates: { build: (c, n) => ['GET', '/updates/?n=' + n, null], takesN: true },
  fortunes: { build: () => ['GET', '/fortunes/', null] },
};

export function env(name, fallback) {
  const v = __ENV[name];
  return v === undefined || v === '' ? fallback : v;
}

export function scenario() {
  const duration = `${env('BENCH_DURATION', '10')}s`;
  const vus = parseInt(env('BENCH_VUS', '1'), 10);
  if (env('BENCH_RATE', '') !== '') {
    return {
      executor: 'constant-arrival-rate',
      rate: parseInt(env('BENCH_RATE'), 10),
      timeUnit: `${env('BENCH_TIME_UNIT', '1')}s`,
      duration,
      preAllocatedVUs: vus,
      maxVUs: parseInt(env('BENCH_MAX_VUS', String(vus)), 10),
      gracefulStop: `${env('BENCH_TIMEOUT', '5')}s`,
    };
  }
  if (env('BENCH_ITERATIONS', '') !== '') {
    return { executor: 'shared-iterations', vus,
             iterations: parseInt(env('BENCH_ITERATIONS'), 10), maxDuration: duration,
             gracefulStop: `${env('BENCH_TIMEOUT', '5')}s` };
  }
  return { executor: 'constant-vus', vus, duration,
           gracefulStop: `${env('BENCH_TIMEOUT', '5')}s` };
}

// build(c) -> [method, path, body-or-null[, kind]]; c has random, random_alnum, randint
// and n; kind = { contentType, tag } (see the top of this file)
export function install(build, { contentType = null, pool = 1000 } = {}) {
  const options = {
    scenarios: { bench: scenario() },
    discardResponseBodies: true,     // bodies are counted in data_received, not kept
    maxRedirects: 0,
    noConnectionReuse: env('BENCH_CLOSE', '0') === '1',
    userAgent: '',                   // wrk and oha send none
    ...(env('BENCH_TLS13', '0') === '1'
      ? { tlsVersion: { min: 'tls1.3', max: 'tls1.3' } } : {}),
    summaryTrendStats: ['min', 'avg', 'max', 'med', 'p(50)', 'p(75)', 'p(90)', 'p(99)',
                        'p(99.9)', 'count'],
  };

  const base = env('BENCH_BASE_URL', 'http://127.0.0.1:8080');
  const token = env('BENCH_TOKEN', 'hardcoded_token');
  const timeout = `${env('BENCH_TIMEOUT', '5')}s`;
  function requestParams(type, tag) {
    const headers = { token };
    if (type) headers['Content-Type'] = type;
    return tag ? { headers, timeout, tags: { endpoint: tag } } : { headers, timeout };
  }
  const params = requestParams(contentType, null);
  // a kind's params, made on its first request: a kind is one object per endpoint
  // (mixed.js), so this holds a handful and no request builds params of its own
  const kindParams = new Map();
  function paramsOf(kind) {
    let p = kindParams.get(kind);
    if (p === undefined) {
      p = requestParams(kind.contentType || contentType, kind.tag);
      kindParams.set(kind, p);
    }
    return p;
  }
  const poolSize = parseInt(env('BENCH_POOL', String(pool)), 10);
  const n = __ENV.BENCH_N ? parseInt(__ENV.BENCH_N, 10) : null;

  // per VU (each VU is its own JS runtime): its generator and its pool
  let c = null;
  let built = [];
  let cursor = 0;

  function next() {
    if (c === null) {
      const random = rng(parseInt(env('BENCH_SEED', '1'), 10) * 1000 + __VU);
      c = {
        n,
        random,
        randint: (lo, hi) => lo + Math.floor(random() * (hi - lo + 1)),
        random_alnum: (lo, hi) => {
          const len = lo + Math.floor(random() * (hi - lo + 1));
          let s = '';
          for (let i = 0; i < len; i++) s += ALNUM[Math.floor(random() * ALNUM.length)];
          return s;
        },
      };
    }
    if (poolSize === 0) return build(c);
    if (built.length < poolSize) {
      const r = build(c);
      built.push(r);
      return r;
    }
    cursor = cursor % poolSize;
    return built[cursor++];
  }

  function iteration() {
    const [method, path, body, kind] = next();
    const res = http.request(method, base + path, body,
                             kind === undefined ? params : paramsOf(kind));
    if (res.status === 0) counters[errorKind(res.error_code)].add(1);
    else if (res.status < 200 || res.status > 299) counters.status.add(1);
    if (res.status !== 0 && res.proto !== 'HTTP/1.1') otherProtocol.add(1);
  }

  function handleSummary(data) {
    return { stdout: 'K6_JSON ' + JSON.stringify(data) + '\n' };
  }

  return { options, iteration, handleSummary };
}
