// test "mixed": every request's endpoint drawn by weight from BENCH_MIX
// (bench/core/mix.py, Mix.script_arg), e.g.
//     get_user:60,update_user:15,queries.5:10,fortunes:10,to_json:5
// KEY:WEIGHT, comma-separated: KEY a contract test with underscores for spaces, with .N
// for the database suite's n (else BENCH_N); WEIGHT a whole number >= 1. Each VU draws
// from its own seeded generator (common.js), which also draws the ids and parameters, and
// builds the drawn endpoint's request as its own test's script does (common.js REQUESTS),
// tagged `endpoint: KEY`. Every request is built afresh (pool 0): a pool would freeze the
// ids and the order of the endpoints.
import { install, REQUESTS } from './common.js';

const ITEM = /^([a-z_]+)(?:\.([0-9]+))?:([0-9]+)$/;

// one endpoint of the mix: { key, weight, build, n, kind }
function endpoint(item) {
  const match = ITEM.exec(item);
  if (match === null) {
    throw new Error(`BENCH_MIX: ${JSON.stringify(item)} is not KEY:WEIGHT (get_user:60)`);
  }
  const [, test, nText, weightText] = match;
  const request = REQUESTS[test];
  if (request === undefined) {
    throw new Error(`BENCH_MIX: unknown test ${test}; known: ${Object.keys(REQUESTS)}`);
  }
  const weight = parseInt(weightText, 10);
  if (weight < 1) throw new Error(`BENCH_MIX: ${item}: the weight must be >= 1`);
  if (nText !== undefined && !request.takesN) throw new Error(`BENCH_MIX: ${test} takes no n`);
  const n = request.takesN ? parseInt(nText || __ENV.BENCH_N || '0', 10) : null;
  if (request.takesN && !(n >= 1)) {
    throw new Error(`BENCH_MIX: ${test} needs its n (${test}.20, or -e BENCH_N=20)`);
  }
  const key = item.slice(0, item.lastIndexOf(':'));
  return { key, weight, build: request.build, n,
           kind: { contentType: request.contentType || null, tag: key } };
}

function parseMix(text) {
  if (!text) throw new Error('mixed needs BENCH_MIX (k6 run -e BENCH_MIX=get_user:60,...)');
  const endpoints = text.split(',').map(endpoint);
  const keys = endpoints.map((e) => e.key);
  const twice = keys.filter((k, i) => keys.indexOf(k) !== i);
  if (twice.length) throw new Error(`BENCH_MIX: ${twice} listed twice`);
  return endpoints;
}

const ENDPOINTS = parseMix(__ENV.BENCH_MIX);
const CUMULATIVE = [];
let TOTAL = 0;
for (const e of ENDPOINTS) CUMULATIVE.push(TOTAL += e.weight);

// the endpoint whose cumulative-weight interval holds a uniform draw in [0, TOTAL)
function draw(c) {
  const r = Math.floor(c.random() * TOTAL);
  let i = 0;
  while (r >= CUMULATIVE[i]) i++;
  return ENDPOINTS[i];
}

const t = install((c) => {
  const e = draw(c);
  const [method, path, body] = e.build(c, e.n);
  return [method, path, body, e.kind];
}, { pool: 0 });

// k6 puts a tagged submetric in handleSummary's data only when a threshold names it
// (https://grafana.com/docs/k6/latest/results-output/end-of-test/custom-summary/: its
// `http_req_duration{staticAsset:yes}` is a "sub-metric from threshold"; .../using-k6/
// workaround-iteration-duration/ uses always-passing thresholds the same way). These
// exist for the per-endpoint figures (bench/load/k6.py `endpoints`) alone and never fail:
// a duration is >= 0, and k6 passes a threshold without samples (an endpoint never
// drawn still has both submetrics, count 0, in k6 v1.8.1).
const thresholds = {};
for (const e of ENDPOINTS) {
  thresholds[`http_req_duration{endpoint:${e.key}}`] = ['max>=0'];
  thresholds[`http_reqs{endpoint:${e.key}}`] = ['count>=0'];
}

export const options = { ...t.options, thresholds };
export default t.iteration;
export const handleSummary = t.handleSummary;
