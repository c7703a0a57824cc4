// test "update user": PATCH /user/{id}/, id uniform in 1..10000, JSON body with a random
// ASCII username (8-16 letters/digits) and a random @example.com email
// (wrk_scripts/update_user.lua, byte for byte the same body layout).
import { install, REQUESTS } from './common.js';

const t = install(REQUESTS.update_user.build,
                  { contentType: REQUESTS.update_user.contentType, pool: 0 });
export const options = t.options;
export default t.iteration;
export const handleSummary = t.handleSummary;
