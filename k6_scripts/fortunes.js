// test "fortunes" (the database suite): GET /fortunes/: the fortune table as an HTML page
// (wrk_scripts/fortunes.lua). Every request is the same: a pool of one request.
import { install, REQUESTS } from './common.js';

const t = install(REQUESTS.fortunes.build, { pool: 1 });
export const options = t.options;
export default t.iteration;
export const handleSummary = t.handleSummary;
