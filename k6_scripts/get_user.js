// test "get user": GET /user/{id}/, id uniform in 1..10000 (wrk_scripts/get_user.lua).
import { install, REQUESTS } from './common.js';

const t = install(REQUESTS.get_user.build, { pool: 0 });
export const options = t.options;
export default t.iteration;
export const handleSummary = t.handleSummary;
