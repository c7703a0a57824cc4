'use strict'

// The HTTP-level unit tests every Node.js server runs through its own app, without a
// database: the status order (token, database, id, body), the JSON 404 / 405 / 400 /
// 500 bodies, raw PATCH bodies of every Content-Type, the query strings, and the
// database suite (n parsing, the fortunes page exactly as specified and escaped, the
// statements per request against a recording fake repository, the warm cache), and the
// HTTP workloads (/upload/'s CRC-32 and 413, /delay/, /static/ with its conditional GET,
// ranges and refused climbs out of the folder, compression on and off), and /ws/ without
// an upgrade.
//
// A server's test file calls defineTests(name, start), where
//   start(cfg, repo) -> Promise<app>, app.call(method, url, { token, body, headers })
//   and app.get(url, token) -> Promise<{ status, type, json, text, headers, raw }>,
//   app.close() -> Promise
// (fastify: fastify.inject(); express: a real socket on 127.0.0.1 and node:http). The
// url is sent as written (no '..' or '%2e%2e' resolved by the client).

const test = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')
const crypto = require('node:crypto')

const contract = require('./contract')
const workloads = require('./workloads')

const CFG = Object.freeze({ db: 'postgres', orm: false, token: 'tok' })

/**
 * A response as the tests read it; `headers` lower-cased names to values, `raw` the
 * body's bytes (a Buffer), `text` them as UTF-8.
 */
function response (status, headers, raw) {
  const text = raw.toString('utf8')
  let json
  try { json = JSON.parse(text) } catch { json = undefined }
  return { status, type: headers['content-type'], json, text, headers, raw }
}

function defineTests (name, startApp) {
  const start = (cfg, repo) => startApp({ ...cfg, serverId: name, name }, repo)
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

  test('routes, statuses and error bodies', async () => {
    const repo = fakeRepo()
    const app = await start(CFG, repo)
    try {
      let r = await app.call('GET', '/ping/', { token: null })
      assert.deepEqual(r.json, { server: name, database: 'postgres', orm: false })
      r = await app.call('GET', '/user/7/')
      assert.equal(r.status, 200)
      assert.match(r.type, /^application\/json/)
      assert.deepEqual(r.json, USER)
      for (const [method, url, status] of [
        ['GET', '/user/7/', 401], ['PATCH', '/user/7/', 401], ['GET', '/plain/', 401], ['GET', '/to_json/', 401],
        ['GET', '/user/8/', 404], ['GET', '/user/0/', 404], ['GET', '/user/abc/', 404], ['GET', '/user/7', 404],
        ['GET', `/user/${'1'.repeat(300)}/`, 404], ['GET', '/user/%ZZ/', 404], ['GET', '/nope', 404],
        ['POST', '/user/7/', 405], ['DELETE', '/plain/', 405], ['PUT', '/ping/', 405]
      ]) {
        r = await app.call(method, url, { token: status === 401 ? null : 'tok' })
        assert.equal(r.status, status, `${method} ${url}`)
        assert.equal(typeof r.json.error, 'string', `${method} ${url}`)
      }
      assert.equal((await app.call('POST', '/user/7/')).headers.allow, 'GET, PATCH, HEAD')

      // PATCH: any Content-Type (or none) is read raw and validated the same way.
      const good = JSON.stringify({ username: 'n', email: 'e' })
      for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded', undefined]) {
        r = await app.call('PATCH', '/user/7/', { body: good, headers: type ? { 'content-type': type } : {} })
        assert.equal(r.status, 200, String(type))
        assert.equal(r.json.username, 'n')
      }
      for (const [body, headers] of [['not json', {}], ['', {}], [good, { 'content-type': 'bogus' }],
        ['x'.repeat(70000), {}], ['{"username":"","email":""}', {}]]) {
        r = await app.call('PATCH', '/user/7/', { body, headers })
        assert.equal(r.status, 400, body.slice(0, 20))
        assert.equal(typeof r.json.error, 'string')
      }
      // The order: token first, then the id, then the body; the database is never asked.
      const before = repo.calls.length
      r = await app.call('PATCH', '/user/7/', { token: 'wrong', body: 'x'.repeat(70000) })
      assert.equal(r.status, 401)
      r = await app.call('PATCH', '/user/abc/', { body: 'not json', headers: { 'content-type': 'bogus' } })
      assert.equal(r.status, 404)
      r = await app.call('PATCH', '/user/0/', { body: 'x'.repeat(70000) })
      assert.equal(r.status, 404)
      assert.equal(repo.calls.length, before)
      r = await app.call('PATCH', '/user/8/', { body: good })
      assert.equal(r.status, 404)

      r = await app.call('GET', '/plain/?param1=a%20b&param2=x+y&param3=%26&param1=ignored')
      assert.equal(r.text, 'param1=a b, param2=x y, param3=&')
      assert.match(r.type, /^text\/plain/)
      r = await app.call('GET', '/to_json/?param1=%C3%A9&param3=')
      assert.deepEqual(r.json, { param1: 'é', param2: null, param3: '' })
    } finally {
      await app.close()
    }
  })

  test('without a database the user endpoints are 404 after the token check', async () => {
    const app = await start({ ...CFG, db: 'none' }, null)
    try {
      assert.equal((await app.call('GET', '/user/1/', { token: null })).status, 401)
      const r = await app.call('PATCH', '/user/1/', { body: 'junk' })
      assert.equal(r.status, 404)
      assert.deepEqual(r.json, { error: 'no database' })
    } finally {
      await app.close()
    }
  })

  test('a database error is a JSON 500, never a crash', async () => {
    const failing = { async getUser () { throw new Error('boom') }, async updateUser () { throw new Error('boom') } }
    const app = await start(CFG, failing)
    const errors = []
    const original = console.error
    console.error = (msg) => errors.push(msg)
    try {
      const r = await app.call('GET', '/user/1/')
      assert.equal(r.status, 500)
      assert.deepEqual(r.json, { error: 'database error' })
      assert.equal(errors.length, 1)
    } finally {
      console.error = original
      await app.close()
    }
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

  const STAMP = '2024-01-01T00:00:00Z'

  function fakeSuiteRepo () {
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

  function unescapeHtml (s) {
    return s.replace(/&(#(\d+)|#x([0-9a-f]+)|amp|lt|gt|quot|apos);/gi, (m, entity, dec, hex) => {
      if (dec) return String.fromCodePoint(Number(dec))
      if (hex) return String.fromCodePoint(parseInt(hex, 16))
      return { amp: '&', lt: '<', gt: '>', quot: '"', apos: '\'' }[entity.toLowerCase()]
    })
  }

  test('fortunes: one SELECT, the page exactly as specified, every message escaped', async () => {
    const repo = fakeSuiteRepo()
    const app = await start(CFG, repo)
    try {
      const r = await app.get('/fortunes/')
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
      assert.equal((await app.get('/fortunes/')).text, r.text)
    } finally {
      await app.close()
    }
  })

  test('queries, updates, cached: n rows, the statements the manifest declares', async () => {
    const repo = fakeSuiteRepo()
    const app = await start(CFG, repo)
    try {
      for (const [query, n] of [['', 1], ['?n=0', 1], ['?n=abc', 1], ['?n=-3', 1], ['?n=1.5', 1], ['?n=', 1],
        ['?n=7', 7], ['?n=501', 500], ['?n=99999999999999999999', 500], ['?n=3&n=9', 3]]) {
        repo.calls.length = 0
        let r = await app.get(`/queries/${query}`)
        assert.equal(r.status, 200, query)
        assert.equal(r.json.length, n, query)
        assert.equal(repo.calls.length, n)
        assert.ok(repo.calls.every((c) => c[0] === 'select'))
        for (const u of r.json) assert.deepEqual(Object.keys(u), Object.keys(contract.user()))

        repo.calls.length = 0
        r = await app.get(`/updates/${query}`)
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

        r = await app.get(`/cached/${query}`)
        assert.equal(r.status, 200, query)
        assert.equal(r.json.length, n, query)
      }

      // Warm the cache with every id (a fake repo that knows all 10,000 rows), then no
      // statement at all.
      repo.calls.length = 0
      for (let i = 0; i < 200; i++) await app.get('/cached/?n=500')
      const misses = repo.calls.length
      assert.ok(misses <= 10000)
      assert.equal(new Set(repo.calls.map((c) => c[1])).size, misses) // one SELECT per miss
      for (let i = 0; i < 20 && repo.calls.length < 10000; i++) await app.get('/cached/?n=500')
      if (repo.calls.length === 10000) {
        const r = await app.get('/cached/?n=500')
        assert.equal(r.json.length, 500)
        assert.equal(repo.calls.length, 10000)
      }
    } finally {
      await app.close()
    }
  })

  test('suite routes: token first, then no database, never a 5xx', async () => {
    const repo = fakeSuiteRepo()
    const app = await start(CFG, repo)
    const noDb = await start({ ...CFG, db: 'none' }, null)
    try {
      for (const url of ['/queries/', '/updates/?n=3', '/fortunes/', '/cached/?n=abc']) {
        let r = await app.get(url, null)
        assert.equal(r.status, 401, url)
        assert.deepEqual(r.json, { error: 'invalid token' })
        r = await app.get(url, 'wrong')
        assert.equal(r.status, 401, url)
        r = await noDb.get(url, null)
        assert.equal(r.status, 401, url)
        r = await noDb.get(url)
        assert.equal(r.status, 404, url)
        assert.deepEqual(r.json, { error: 'no database' })
        const res = await app.call('POST', url)
        assert.equal(res.status, 405, url)
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
    const app = await start(CFG, { getUser: boom, setUsername: boom, fortunes: boom })
    const original = console.error
    console.error = () => {}
    try {
      for (const url of ['/queries/', '/updates/', '/fortunes/', '/cached/']) {
        const r = await app.get(url)
        assert.equal(r.status, 500, url)
        assert.deepEqual(r.json, { error: 'database error' })
      }
    } finally {
      console.error = original
      await app.close()
    }
  })

  // ------------------------------------------------------- the HTTP workloads

  test('upload: the body\'s length and CRC-32, 413 over 8 MiB, token first, 405', async () => {
    const app = await start({ ...CFG, db: 'none' }, null)
    const octets = { 'content-type': 'application/octet-stream' }
    try {
      let r = await app.call('POST', '/upload/', { body: '123456789', headers: octets })
      assert.equal(r.status, 200)
      assert.match(r.type, /^application\/json/)
      assert.deepEqual(r.json, { bytes: 9, crc32: 'cbf43926' }) // the CRC-32 check value
      r = await app.call('POST', '/upload/', { body: Buffer.alloc(0), headers: octets })
      assert.deepEqual(r.json, { bytes: 0, crc32: '00000000' })
      // exactly 8 MiB is accepted (binary, every byte value), one byte more is not
      const big = Buffer.alloc(workloads.MAX_UPLOAD, 'webbench\x00\xff\n', 'latin1')
      r = await app.call('POST', '/upload/', { body: big, headers: octets })
      assert.equal(r.status, 200)
      assert.deepEqual(r.json, { bytes: big.length, crc32: zlib.crc32(big).toString(16).padStart(8, '0') })
      r = await app.call('POST', '/upload/', { body: Buffer.concat([big, Buffer.from('x')]), headers: octets })
      assert.equal(r.status, 413)
      assert.equal(typeof r.json.error, 'string')
      r = await app.call('POST', '/upload/', { token: null, body: 'x', headers: octets })
      assert.equal(r.status, 401)
      r = await app.call('GET', '/upload/')
      assert.equal(r.status, 405)
      assert.equal(r.headers.allow, 'POST')
      assert.equal(typeof r.json.error, 'string')
    } finally {
      await app.close()
    }
  })

  test('upload: a body over 8 MiB without Content-Length is a 413 too', async () => {
    // the stream helper on its own: a chunked body counted as it arrives
    const { Readable } = require('node:stream')
    const chunks = (n, size) => Readable.from(Array.from({ length: n }, () => Buffer.alloc(size, 1)))
    assert.equal(await workloads.readUpload(chunks(9, 1024 * 1024)), null)
    assert.equal(await workloads.readUpload(chunks(8, 1024 * 1024)),
      workloads.uploadBody(8 * 1024 * 1024, zlib.crc32(Buffer.alloc(8 * 1024 * 1024, 1))))
  })

  test('/ws/ without an upgrade: token first, then a JSON 426; 405', async () => {
    const app = await start({ ...CFG, db: 'none' }, null)
    try {
      let r = await app.get('/ws/', null)
      assert.equal(r.status, 401)
      r = await app.get('/ws/')
      assert.equal(r.status, 426)
      assert.equal(r.headers.upgrade, 'websocket')
      assert.equal(typeof r.json.error, 'string')
      r = await app.call('POST', '/ws/')
      assert.equal(r.status, 405)
      assert.equal(r.headers.allow, 'GET, HEAD')
    } finally {
      await app.close()
    }
  })

  test('delay: 10 ms, then the exact text; token first, 405', async () => {
    const app = await start({ ...CFG, db: 'none' }, null)
    try {
      const began = process.hrtime.bigint()
      let r = await app.get('/delay/')
      assert.ok(process.hrtime.bigint() - began >= 10_000_000n)
      assert.equal(r.status, 200)
      assert.match(r.type, /^text\/plain/)
      assert.equal(r.text, 'delayed 10 ms')
      r = await app.get('/delay/', null)
      assert.equal(r.status, 401)
      r = await app.call('POST', '/delay/')
      assert.equal(r.status, 405)
      assert.equal(r.headers.allow, 'GET, HEAD')
    } finally {
      await app.close()
    }
  })

  /** A folder like the harness's: files/ served, outside.txt beside it. */
  function staticFolder () {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'webbench-static-'))
    const files = path.join(root, 'files')
    fs.mkdirSync(files)
    const text = Buffer.from('static file benchmark harness request answer\n'.repeat(100)) // 4,500 bytes
    fs.writeFileSync(path.join(files, '4k.txt'), text)
    fs.writeFileSync(path.join(root, 'outside.txt'), 'outside: never served\n')
    return { root, files, text }
  }

  test('static: the framework\'s handler, public, ETag / Last-Modified, 304, 206, no climbing out', async () => {
    const { root, files, text } = staticFolder()
    const app = await start({ ...CFG, db: 'none', staticDir: files }, null)
    const without = await start({ ...CFG, db: 'none' }, null)
    try {
      let r = await app.get('/static/4k.txt', null) // no token needed
      assert.equal(r.status, 200)
      assert.ok(r.raw.equals(text))
      assert.equal(r.headers['content-length'], String(text.length))
      assert.match(r.type, /^text\/plain/)
      assert.equal(r.headers['content-encoding'], undefined)
      const etag = r.headers.etag
      const modified = r.headers['last-modified']
      assert.ok(etag || modified)
      if (etag) assert.equal((await app.call('GET', '/static/4k.txt', { headers: { 'if-none-match': etag } })).status, 304)
      if (modified) {
        assert.equal((await app.call('GET', '/static/4k.txt', { headers: { 'if-modified-since': modified } })).status, 304)
      }
      r = await app.call('GET', '/static/4k.txt', { headers: { range: 'bytes=100-199' } })
      assert.equal(r.status, 206)
      assert.equal(r.headers['content-range'], `bytes 100-199/${text.length}`)
      assert.ok(r.raw.equals(text.subarray(100, 200)))
      for (const url of ['/static/nope.txt', '/static/../outside.txt', '/static/%2e%2e/outside.txt',
        '/static/..%2foutside.txt', '/static/%2e%2e%2foutside.txt', '/static/..%5coutside.txt',
        '/static/%2e%2e%5coutside.txt', `/static/${encodeURIComponent(path.join(root, 'outside.txt'))}`,
        '/static//etc/passwd', '/static/%00', '/static/%ZZ']) {
        r = await app.get(url, null)
        assert.ok(r.status >= 400 && r.status < 500, `${url}: ${r.status}`)
        assert.ok(!r.text.includes('outside'), url)
      }
      // without BENCH_STATIC_DIR there is no /static/
      assert.equal((await without.get('/static/4k.txt', null)).status, 404)
    } finally {
      await app.close()
      await without.close()
      fs.rmSync(root, { recursive: true, force: true })
    }
  })

  test('compression: gzip and br by Accept-Encoding when on, static files too; none when off', async () => {
    const { root, files, text } = staticFolder()
    const on = await start({ ...CFG, db: 'none', staticDir: files, compression: true }, null)
    const off = await start({ ...CFG, db: 'none', staticDir: files }, null)
    const long = 'x'.repeat(3000)
    try {
      for (const [encoding, decode] of [['gzip', zlib.gunzipSync], ['br', zlib.brotliDecompressSync]]) {
        const headers = { 'accept-encoding': encoding }
        let r = await on.call('GET', '/static/4k.txt', { token: null, headers })
        assert.equal(r.status, 200)
        assert.equal(r.headers['content-encoding'], encoding)
        assert.match(r.headers.vary, /accept-encoding/i)
        assert.ok(decode(r.raw).equals(text))
        r = await on.call('GET', `/plain/?param1=${long}`, { headers })
        assert.equal(r.headers['content-encoding'], encoding)
        assert.equal(decode(r.raw).toString(), `param1=${long}, param2=, param3=`)
        r = await off.call('GET', '/static/4k.txt', { token: null, headers })
        assert.equal(r.headers['content-encoding'], undefined)
        assert.ok(r.raw.equals(text))
        // a range is of the file's bytes: sent as is
        r = await on.call('GET', '/static/4k.txt', { token: null, headers: { ...headers, range: 'bytes=0-2999' } })
        assert.equal(r.status, 206)
        assert.equal(r.headers['content-encoding'], undefined)
        assert.ok(r.raw.equals(text.subarray(0, 3000)))
      }
      // no Accept-Encoding: as is
      const r = await on.call('GET', '/static/4k.txt', { token: null })
      assert.equal(r.headers['content-encoding'], undefined)
      assert.ok(r.raw.equals(text))
    } finally {
      await on.close()
      await off.close()
      fs.rmSync(root, { recursive: true, force: true })
    }
  })
}

/**
 * The WebSocket echo on /ws/ (servers/README.md, "WebSocket") over a real socket:
 * `listen(cfg)` -> Promise<{ port, close() }> serves the server's app on 127.0.0.1;
 * `WebSocket` is the ws client class of the server's own node_modules. The RFC 6455
 * cases are the harness's (bench/verify/websocket.py on a raw client): here the
 * token before the upgrade, the echo of each kind, and the closes ws makes itself.
 */
function defineWebsocketTests (name, listen, WebSocket) {
  const cfg = { ...CFG, db: 'none', serverId: name, name }

  /** A client on /ws/: resolves once open, or to the HTTP answer that refused it. */
  function connect (port, token = 'tok') {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws/`, { headers: token === null ? {} : { token } })
      ws.once('open', () => resolve({ ws }))
      ws.once('unexpected-response', (req, res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve({ refused: response(res.statusCode, res.headers, Buffer.concat(chunks)) }))
      })
      ws.once('error', reject)
    })
  }
  const next = (ws, event) => new Promise((resolve) => ws.once(event, (...args) => resolve(args)))

  test('websocket: token before the upgrade, echo by kind, ping, the closes', async () => {
    const server = await listen(cfg)
    try {
      const { refused } = await connect(server.port, null)
      assert.equal(refused.status, 401)
      assert.deepEqual(refused.json, { error: 'invalid token' })

      const { ws } = await connect(server.port)
      assert.equal(ws.extensions, '') // no permessage-deflate
      for (const [payload, binary] of [['é😀 webbench', false], [crypto.randomBytes(4096), true],
        ['x'.repeat(64 * 1024), false], [crypto.randomBytes(64 * 1024), true], ['', false]]) {
        ws.send(payload, { binary })
        const [data, isBinary] = await next(ws, 'message')
        assert.equal(isBinary, binary)
        assert.ok(data.equals(Buffer.from(payload)))
      }
      ws.ping('webbench-ping')
      assert.equal((await next(ws, 'pong'))[0].toString(), 'webbench-ping')
      ws.close(1000, 'done')
      assert.equal((await next(ws, 'close'))[0], 1000)

      // ws's own checks: a text message that is not UTF-8 (1007), an unmasked frame (1002)
      for (const [send, code] of [[(c) => c.send(Buffer.from([0xc3, 0x28]), { binary: false }), 1007],
        [(c) => c.send('unmasked', { mask: false }), 1002]]) {
        const { ws: client } = await connect(server.port)
        client.on('error', () => {}) // the server's close is the answer
        send(client)
        assert.equal((await next(client, 'close'))[0], code)
      }
    } finally {
      await server.close()
    }
  })
}

module.exports = { defineTests, defineWebsocketTests, response, CFG }
