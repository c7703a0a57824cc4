// test "plain": GET /plain/?param1=..&param2=..&param3=.. with random ASCII letters/digits
// (4-12 chars each), as wrk_scripts/plain.lua: a pool of 1000 per VU, cycled.
import { install } from './common.js';

const t = install((c) => ['GET', '/plain/?param1=' + c.random_alnum(4, 12) +
                                 '&param2=' + c.random_alnum(4, 12) +
                                 '&param3=' + c.random_alnum(4, 12), null]);
export const options = t.options;
export default t.iteration;
export const handleSummary = t.handleSummary;
