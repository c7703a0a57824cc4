'use strict'

// Unit tests without a database: `node --test` in servers/fastify (after the build).
// The contract's pure functions, and the fastify app driven through inject() with a
// fake repository, so the status order (token, database, id, body) and the JSON error
// bodies are checked for inputs the harness's verification does not send.

const test = require('node:test')
const assert = require('node:assert/strict')

const contract = require('../lib/contract')
const { buildApp } = require('../lib/app')

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

const CFG = { serverId: 'fastify', db: 'postgres', orm: false, token: 'tok' }
const USER = contract.user(7, 'u', null, '2024-01-01T00:00:07Z', '2024-01-01T00:00:07Z', false)

function fakeRepo () {
  const calls = []
  return {
    calls,
    async getUser (id) { calls.push(['get', id]); return id === 7 ? USER : null },
    async updateUser (id, username, email) {
      calls.push(['update', id, username, email])
      return id === 7 ? { ...USER, username, email } : null
    }
  }
}

async function call (app, method, url, { token = 'tok', body, headers = {} } = {}) {
  const res = await app.inject({
    method,
    url,
    headers: { ...(token === null ? {} : { token }), ...headers },
    payload: body
  })
  let json
  try { json = JSON.parse(res.body) } catch { json = undefined }
  return { status: res.statusCode, type: res.headers['content-type'], json, text: res.body, headers: res.headers }
}

test('routes, statuses and error bodies', async () => {
  const repo = fakeRepo()
  const app = buildApp(CFG, repo)
  await app.ready()
  try {
    let r = await call(app, 'GET', '/ping/', { token: null })
    assert.deepEqual(r.json, { server: 'fastify', database: 'postgres', orm: false })
    r = await call(app, 'GET', '/user/7/')
    assert.equal(r.status, 200)
    assert.match(r.type, /^application\/json/)
    assert.deepEqual(r.json, USER)
    for (const [method, url, status] of [
      ['GET', '/user/7/', 401], ['PATCH', '/user/7/', 401], ['GET', '/plain/', 401], ['GET', '/to_json/', 401],
      ['GET', '/user/8/', 404], ['GET', '/user/0/', 404], ['GET', '/user/abc/', 404], ['GET', '/user/7', 404],
      ['GET', `/user/${'1'.repeat(300)}/`, 404], ['GET', '/user/%ZZ/', 404], ['GET', '/nope', 404],
      ['POST', '/user/7/', 405], ['DELETE', '/plain/', 405], ['PUT', '/ping/', 405]
    ]) {
      r = await call(app, method, url, { token: status === 401 ? null : 'tok' })
      assert.equal(r.status, status, `${method} ${url}`)
      assert.equal(typeof r.json.error, 'string', `${method} ${url}`)
    }
    assert.equal((await call(app, 'POST', '/user/7/')).headers.allow, 'GET, PATCH, HEAD')

    // PATCH: any Content-Type (or none) is read raw and validated the same way.
    const good = JSON.stringify({ username: 'n', email: 'e' })
    for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded', undefined]) {
      r = await call(app, 'PATCH', '/user/7/', { body: good, headers: type ? { 'content-type': type } : {} })
      assert.equal(r.status, 200, String(type))
      assert.equal(r.json.username, 'n')
    }
    for (const [body, headers] of [['not json', {}], ['', {}], [good, { 'content-type': 'bogus' }],
      ['x'.repeat(70000), {}], ['{"username":"","email":""}', {}]]) {
      r = await call(app, 'PATCH', '/user/7/', { body, headers })
      assert.equal(r.status, 400, body.slice(0, 20))
      assert.equal(typeof r.json.error, 'string')
    }
    // The order: token first, then the id, then the body; the database is never asked.
    const before = repo.calls.length
    r = await call(app, 'PATCH', '/user/7/', { token: 'wrong', body: 'x'.repeat(70000) })
    assert.equal(r.status, 401)
    r = await call(app, 'PATCH', '/user/abc/', { body: 'not json', headers: { 'content-type': 'bogus' } })
    assert.equal(r.status, 404)
    r = await call(app, 'PATCH', '/user/0/', { body: 'x'.repeat(70000) })
    assert.equal(r.status, 404)
    assert.equal(repo.calls.length, before)
    r = await call(app, 'PATCH', '/user/8/', { body: good })
    assert.equal(r.status, 404)

    r = await call(app, 'GET', '/plain/?param1=a%20b&param2=x+y&param3=%26&param1=ignored')
    assert.equal(r.text, 'param1=a b, param2=x y, param3=&')
    assert.match(r.type, /^text\/plain/)
    r = await call(app, 'GET', '/to_json/?param1=%C3%A9&param3=')
    assert.deepEqual(r.json, { param1: 'é', param2: null, param3: '' })
  } finally {
    await app.close()
  }
})

test('without a database the user endpoints are 404 after the token check', async () => {
  const app = buildApp({ ...CFG, db: 'none' }, null)
  await app.ready()
  try {
    assert.equal((await call(app, 'GET', '/user/1/', { token: null })).status, 401)
    const r = await call(app, 'PATCH', '/user/1/', { body: 'junk' })
    assert.equal(r.status, 404)
    assert.deepEqual(r.json, { error: 'no database' })
  } finally {
    await app.close()
  }
})

test('a database error is a JSON 500, never a crash', async () => {
  const failing = { async getUser () { throw new Error('boom') }, async updateUser () { throw new Error('boom') } }
  const app = buildApp(CFG, failing)
  await app.ready()
  const errors = []
  const original = console.error
  console.error = (msg) => errors.push(msg)
  try {
    const r = await call(app, 'GET', '/user/1/')
    assert.equal(r.status, 500)
    assert.deepEqual(r.json, { error: 'database error' })
    assert.equal(errors.length, 1)
  } finally {
    console.error = original
    await app.close()
  }
})
