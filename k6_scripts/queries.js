// test "queries" (the database suite): GET /queries/?n=N (wrk_scripts/queries.lua). The server draws
// the ids, so every request is the same: a pool of one request.
import { install, REQUESTS } from './common.js';

const t = install((c) => {
  if (c.n === null) throw new Error('queries needs BENCH_N (k6 run -e BENCH_N=20 ...)');
  return REQUESTS.queries.build(c, c.n);
}, { pool: 1 });
export const options = t.options;
export default t.iteration;
export const handleSummary = t.handleSummary;
