// test "get user": GET /user/{id}/, id uniform in 1..10000 (wrk_scripts/get_user.lua).
import { install } from './common.js';

const t = install((c) => ['GET', '/user/' + c.randint(1, 10000) + '/', null], { pool: 0 });
export const options = t.options;
export default t.iteration;
export const handleSummary = t.handleSummary;
