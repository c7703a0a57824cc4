'use strict'

// The database suite (CONTRACT.md section 6) without a database: `n` parsing, the
// fortunes' order and escaping, and the four endpoints through fastify.inject() with a
// fake repository that records every statement it would have sent.

const test = require('node:test')
const assert = require('node:assert/strict')

const contract = require('../lib/contract')
const { mysqlDatetime } = require('../lib/db')
const { buildApp } = require('../lib/app')

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
  assert.equal(mysqlDatetime('2026-05-04T12:34:56.789Z'), '2026-05-04 12:34:56.789')
})

// The twelve rows of the contract's fortune table.
const FORTUNES = [
  'Benchmarks measure what they measure.',
  '<script>alert("escape me")</script>',
  'Tom & Jerry\'s "quoted" <b>bold</b> claim',
  'A median without its interval is an anecdote.',
  'Zero errors is the only acceptable number.',
  'Keep-alive or close: say which.',
  'Cold caches tell the truth.',
  'Latency hides in the tail.',
  'フレームワークの速さは測り方次第。',
  'Ünïcödé must survive the round trip.',
  '\'single\' & "double" quotes',
  'Every request deserves an answer.'
].map((message, i) => ({ id: i + 1, message }))

const CFG = { serverId: 'fastify', db: 'postgres', orm: false, token: 'tok' }
const STAMP = '2024-01-01T00:00:00Z'

function fakeRepo () {
  const calls = []
  return {
    calls,
    async getUser (id) {
      calls.push(['select', id])
      return contract.user(id, `user${id}`, null, STAMP, STAMP, id % 10 === 0)
    },
    async setUsername (id, username, stamp) { calls.push(['update', id, username, stamp]) },
    async fortunes () { calls.push(['fortunes']); return FORTUNES.map((f) => ({ ...f })) }
  }
}

async function get (app, url, token = 'tok') {
  const res = await app.inject({ method: 'GET', url, headers: token === null ? {} : { token } })
  let json
  try { json = JSON.parse(res.body) } catch { json = undefined }
  return { status: res.statusCode, type: res.headers['content-type'], json, text: res.body }
}

function unescapeHtml (s) {
  return s.replace(/&(#(\d+)|#x([0-9a-f]+)|amp|lt|gt|quot|apos);/gi, (m, entity, dec, hex) => {
    if (dec) return String.fromCodePoint(Number(dec))
    if (hex) return String.fromCodePoint(parseInt(hex, 16))
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: '\'' }[entity.toLowerCase()]
  })
}

test('fortunes: one SELECT, the page exactly as specified, every message escaped', async () => {
  const repo = fakeRepo()
  const app = buildApp(CFG, repo)
  await app.ready()
  try {
    const r = await get(app, '/fortunes/')
    assert.equal(r.status, 200)
    assert.equal(r.type, 'text/html; charset=utf-8')
    assert.deepEqual(repo.calls, [['fortunes']])
    assert.ok(!r.text.includes('<script>'))
    assert.ok(!r.text.includes('<b>'))
    assert.ok(r.text.includes('&lt;script&gt;alert(&quot;escape me&quot;)&lt;/script&gt;'))
    assert.ok(r.text.includes('Tom &amp; Jerry&#39;s &quot;quoted&quot; &lt;b&gt;bold&lt;/b&gt; claim'))
    const head = '<!DOCTYPE html><html><head><title>Fortunes</title></head><body><table>' +
      '<tr><th>id</th><th>message</th></tr>'
    const tail = '</table></body></html>'
    assert.ok(r.text.startsWith(head))
    assert.ok(r.text.endsWith(tail))
    const rows = r.text.slice(head.length, -tail.length)
    const cells = [...rows.matchAll(/<tr><td>([^<]*)<\/td><td>([^<]*)<\/td><\/tr>/g)]
    assert.equal(cells.map((m) => m[0]).join(''), rows) // nothing else between the rows
    const expected = [...FORTUNES, { id: 0, message: 'A fortune added at request time.' }]
      .sort((a, b) => contract.compareCodePoints(a.message, b.message))
    assert.deepEqual(cells.map((m) => ({ id: Number(m[1]), message: unescapeHtml(m[2]) })), expected)
    assert.equal(cells.length, 13)
    // rendered again from the cached template, the same page
    assert.equal((await get(app, '/fortunes/')).text, r.text)
  } finally {
    await app.close()
  }
})

test('queries, updates, cached: n rows, the statements the manifest declares', async () => {
  const repo = fakeRepo()
  const app = buildApp(CFG, repo)
  await app.ready()
  try {
    for (const [query, n] of [['', 1], ['?n=0', 1], ['?n=abc', 1], ['?n=-3', 1], ['?n=1.5', 1], ['?n=', 1],
      ['?n=7', 7], ['?n=501', 500], ['?n=99999999999999999999', 500], ['?n=3&n=9', 3]]) {
      repo.calls.length = 0
      let r = await get(app, `/queries/${query}`)
      assert.equal(r.status, 200, query)
      assert.equal(r.json.length, n, query)
      assert.equal(repo.calls.length, n)
      assert.ok(repo.calls.every((c) => c[0] === 'select'))
      for (const u of r.json) assert.deepEqual(Object.keys(u), Object.keys(contract.user()))

      repo.calls.length = 0
      r = await get(app, `/updates/${query}`)
      assert.equal(r.status, 200, query)
      assert.equal(r.json.length, n, query)
      const selects = repo.calls.slice(0, n)
      const writes = repo.calls.slice(n)
      assert.ok(selects.every((c) => c[0] === 'select'))
      assert.equal(new Set(selects.map((c) => c[1])).size, n) // distinct ids
      assert.equal(writes.length, n)
      assert.ok(writes.every((c) => c[0] === 'update'))
      const ids = writes.map((c) => c[1])
      assert.deepEqual(ids, [...ids].sort((a, b) => a - b)) // ascending id order
      // the answer is what was written
      const byId = new Map(r.json.map((u) => [u.user_id, u]))
      for (const [, id, username, stamp] of writes) {
        assert.equal(byId.get(id).username, username)
        assert.equal(byId.get(id).updated_at, stamp)
        assert.match(username, /^u\d+$/)
        assert.match(stamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        assert.equal(byId.get(id).created_at, STAMP)
      }

      r = await get(app, `/cached/${query}`)
      assert.equal(r.status, 200, query)
      assert.equal(r.json.length, n, query)
    }

    // Warm the cache with every id (a fake repo that knows all 10,000 rows), then no
    // statement at all.
    repo.calls.length = 0
    for (let i = 0; i < 200; i++) await get(app, '/cached/?n=500')
    const misses = repo.calls.length
    assert.ok(misses <= 10000)
    assert.equal(new Set(repo.calls.map((c) => c[1])).size, misses) // one SELECT per miss
    for (let i = 0; i < 20 && repo.calls.length < 10000; i++) await get(app, '/cached/?n=500')
    if (repo.calls.length === 10000) {
      const r = await get(app, '/cached/?n=500')
      assert.equal(r.json.length, 500)
      assert.equal(repo.calls.length, 10000)
    }
  } finally {
    await app.close()
  }
})

test('suite routes: token first, then no database, never a 5xx', async () => {
  const repo = fakeRepo()
  const app = buildApp(CFG, repo)
  const noDb = buildApp({ ...CFG, db: 'none' }, null)
  await app.ready()
  await noDb.ready()
  try {
    for (const url of ['/queries/', '/updates/?n=3', '/fortunes/', '/cached/?n=abc']) {
      let r = await get(app, url, null)
      assert.equal(r.status, 401, url)
      assert.deepEqual(r.json, { error: 'invalid token' })
      r = await get(app, url, 'wrong')
      assert.equal(r.status, 401, url)
      r = await get(noDb, url, null)
      assert.equal(r.status, 401, url)
      r = await get(noDb, url)
      assert.equal(r.status, 404, url)
      assert.deepEqual(r.json, { error: 'no database' })
      const res = await app.inject({ method: 'POST', url, headers: { token: 'tok' } })
      assert.equal(res.statusCode, 405, url)
      assert.equal(res.headers.allow, 'GET, HEAD')
    }
    assert.deepEqual(repo.calls, [])
  } finally {
    await app.close()
    await noDb.close()
  }
})

test('suite: a database error is a JSON 500, never a crash', async () => {
  const boom = async () => { throw new Error('boom') }
  const app = buildApp(CFG, { getUser: boom, setUsername: boom, fortunes: boom })
  await app.ready()
  const original = console.error
  console.error = () => {}
  try {
    for (const url of ['/queries/', '/updates/', '/fortunes/', '/cached/']) {
      const r = await get(app, url)
      assert.equal(r.status, 500, url)
      assert.deepEqual(r.json, { error: 'database error' })
    }
  } finally {
    console.error = original
    await app.close()
  }
})
