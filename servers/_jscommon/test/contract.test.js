'use strict'

// Unit tests of the Node.js servers' shared code without a database or a framework:
// `node --test test/` in servers/_jscommon (nothing to install), also run by every
// Node.js server's `npm test`. The contract's pure functions; the HTTP-level tests
// each server runs through its own app are in ../conformance.js.

const test = require('node:test')
const assert = require('node:assert/strict')

const contract = require('../contract')
const db = require('../db')

test('user ids: ASCII digits, 1..2147483647', () => {
  const ok = { 1: 1, '0010': 10, '0000000001': 1, 2147483647: 2147483647 }
  for (const [raw, id] of Object.entries(ok)) assert.equal(contract.parseUserId(raw), id)
  for (const raw of ['', '0', '00000000001', '2147483648', '99999999999999999999', '-1', '+1',
    '1a', '1.0', ' 1', '１', '1e3']) {
    assert.equal(contract.parseUserId(raw), null, raw)
  }
})

test('PATCH bodies', () => {
  const body = (v) => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v))
  assert.deepEqual(contract.parsePatchBody(body({ username: 'a', email: 'b', x: 1 })),
    { username: 'a', email: 'b' })
  assert.deepEqual(contract.parsePatchBody(body({ username: 'a', email: '' })),
    { username: 'a', email: '' })
  assert.deepEqual(contract.parsePatchBody(body('{"__proto__":{},"username":"a","email":"b"}')),
    { username: 'a', email: 'b' })
  const emoji = '\u{1F600}'
  assert.equal(typeof contract.parsePatchBody(body({ username: emoji.repeat(256), email: '' })), 'object')
  assert.equal(typeof contract.parsePatchBody(body({ username: 'é'.repeat(256), email: 'é'.repeat(256) })), 'object')
  const bad = [undefined, Buffer.alloc(0), body('not json'), body('[1]'), body('null'), body('"x"'),
    body({ username: 'a' }), body({ email: 'a' }), body({ username: '', email: 'b' }),
    body({ username: 1, email: 'b' }), body({ username: 'a', email: null }),
    body({ username: ['a'], email: 'b' }), body({ username: 'a\u0000', email: 'b' }),
    body('{"username":"\\ud800","email":"b"}'), body({ username: 'a', email: 'x'.repeat(257) }),
    body({ username: emoji.repeat(257), email: '' }),
    Buffer.from([0x7b, 0x22, 0x75, 0x22, 0x3a, 0xff, 0x7d]), body('['.repeat(100000))]
  for (const b of bad) assert.equal(typeof contract.parsePatchBody(b), 'string', String(b).slice(0, 40))
})

test('timestamps keep microseconds and get an explicit offset', () => {
  assert.equal(contract.pgTimestamp('2024-01-01 00:00:01+00'), '2024-01-01T00:00:01Z')
  assert.equal(contract.pgTimestamp('2026-05-04 12:34:56.123456+00'), '2026-05-04T12:34:56.123456Z')
  assert.equal(contract.pgTimestamp('2026-05-04 12:34:56.1+02'), '2026-05-04T12:34:56.1+02:00')
  assert.equal(contract.pgTimestamp('2026-05-04 12:34:56+05:30'), '2026-05-04T12:34:56+05:30')
  assert.equal(contract.mysqlTimestamp('2024-01-01 00:00:01.000000'), '2024-01-01T00:00:01.000000Z')
  assert.equal(contract.mysqlTimestamp('2026-05-04 12:34:56.123456'), '2026-05-04T12:34:56.123456Z')
})

test('n: ASCII digits clamped to 1..500, anything else is 1', () => {
  const cases = {
    1: 1,
    7: 7,
    '007': 7,
    500: 500,
    501: 500,
    1000: 500,
    '0': 1,
    '0000': 1,
    '00000000000000000000000000000000000500': 500,
    '99999999999999999999': 500,
    ['9'.repeat(400)]: 500,
    '': 1,
    abc: 1,
    '-3': 1,
    '+3': 1,
    '1.5': 1,
    '1e3': 1,
    ' 5': 1,
    '5 ': 1,
    '0x10': 1,
    '１': 1, // a full-width digit is not ASCII
    '12a': 1
  }
  for (const [raw, n] of Object.entries(cases)) assert.equal(contract.parseCount(raw), n, JSON.stringify(raw))
  assert.equal(contract.parseCount(undefined), 1)
  assert.equal(contract.parseCount(null), 1)
})

test('random ids and usernames are in range; update ids are distinct', () => {
  for (let i = 0; i < 2000; i++) {
    const id = contract.randomId()
    assert.ok(Number.isInteger(id) && id >= 1 && id <= 10000)
    const u = contract.randomUsername()
    assert.match(u, /^u[1-9][0-9]*$/)
    assert.ok(Number(u.slice(1)) <= 1000000)
  }
  const ids = contract.distinctIds(500)
  assert.equal(ids.length, 500)
  assert.equal(new Set(ids).size, 500)
})

test('fortunes: code-point order, not UTF-16 code units', () => {
  // U+1F600 (surrogates D83D DE00) sorts after U+FF5E in code points; '<' says before.
  const astral = '\u{1F600}'
  const high = '\uFF5E'
  assert.ok(astral < high) // JavaScript's own comparison: UTF-16 units
  assert.ok(contract.compareCodePoints(astral, high) > 0)
  assert.ok(contract.compareCodePoints('a', 'ab') < 0)
  assert.equal(contract.compareCodePoints('abc', 'abc'), 0)
  const sorted = contract.prepareFortunes([{ id: 1, message: 'b' }, { id: 2, message: high },
    { id: 3, message: astral }, { id: 4, message: 'Z' }])
  assert.deepEqual(sorted.map((f) => f.id), [0, 4, 1, 2, 3]) // 'A fortune ...' first
  assert.deepEqual(sorted[0], { id: 0, message: 'A fortune added at request time.' })
})

test('mysqlDatetime: ISO UTC text to DATETIME text', () => {
  assert.equal(db.mysqlDatetime('2026-05-04T12:34:56.789Z'), '2026-05-04 12:34:56.789')
})
