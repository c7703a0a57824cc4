// test "to json": GET /to_json/?param1=..&param2=..&param3=.. with random ASCII letters/digits
// (4-12 chars each), as wrk_scripts/to_json.lua: a pool of 1000 per VU, cycled.
import { install, REQUESTS } from './common.js';

const t = install(REQUESTS.to_json.build);
export const options = t.options;
export default t.iteration;
export const handleSummary = t.handleSummary;
