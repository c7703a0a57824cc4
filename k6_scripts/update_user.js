// test "update user": PATCH /user/{id}/, id uniform in 1..10000, JSON body with a random
// ASCII username (8-16 letters/digits) and a random @example.com email
// (wrk_scripts/update_user.lua, byte for byte the same body layout).
import { install } from './common.js';

const t = install((c) => {
  const id = c.randint(1, 10000);
  const body = '{"username": "' + c.random_alnum(8, 16) +
               '", "email": "' + c.random_alnum(8, 16) + '@example.com"}';
  return ['PATCH', '/user/' + id + '/', body];
}, { contentType: 'application/json', pool: 0 });
export const options = t.options;
export default t.iteration;
export const handleSummary = t.handleSummary;
