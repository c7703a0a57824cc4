// test "cached" (the database suite): GET /cached/?n=N (wrk_scripts/cached.lua). The server draws
// the ids, so every request is the same: a pool of one request.
import { install } from './common.js';

const t = install((c) => {
  if (c.n === null) throw new Error('cached needs BENCH_N (k6 run -e BENCH_N=20 ...)');
  return ['GET', '/cached/?n=' + c.n, null];
}, { pool: 1 });
export const options = t.options;
export default t.iteration;
export const handleSummary = t.handleSummary;
