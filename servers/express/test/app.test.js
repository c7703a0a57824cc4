'use strict'

// Unit tests without a database: `npm test` in servers/express (after the build). The
// Node.js servers' shared HTTP-level tests (../../_jscommon/conformance.js) against
// the express app on a real socket (127.0.0.1, an ephemeral port) with fetch; `npm
// test` also runs the shared code's own unit tests.

const test = require('node:test')
const assert = require('node:assert/strict')
const { defineTests, response, CFG } = require('../../_jscommon/conformance')
const { buildServer } = require('../lib/app')

async function start (cfg, repo) {
  const srv = buildServer({ ...cfg, host: '127.0.0.1', port: 0 }, repo)
  await srv.listen()
  const base = `http://127.0.0.1:${srv.server.address().port}`
  async function call (method, url, { token = 'tok', body, headers = {} } = {}) {
    const res = await fetch(base + url, {
      method,
      headers: { ...(token === null ? {} : { token }), ...headers },
      body
    })
    const text = await res.text()
    return response(res.status, Object.fromEntries(res.headers), text)
  }
  return {
    call,
    get: (url, token = 'tok') => call('GET', url, { token }),
    close: () => srv.close()
  }
}

defineTests('express', start)

test('production settings: no X-Powered-By, no ETag, keep-alive 72 s, HEAD, OPTIONS', async () => {
  const app = await start({ ...CFG, serverId: 'express', name: 'express' }, null)
  try {
    const r = await app.get('/to_json/?param1=a')
    assert.equal(r.status, 200)
    assert.equal(r.type, 'application/json; charset=utf-8')
    assert.equal(r.headers['x-powered-by'], undefined)
    assert.equal(r.headers.etag, undefined)
    assert.equal(r.headers['keep-alive'], 'timeout=72')
    const head = await app.call('HEAD', '/plain/')
    assert.equal(head.status, 200)
    assert.equal(head.text, '')
    const options = await app.call('OPTIONS', '/ping/')
    assert.equal(options.status, 405)
    assert.equal(options.headers.allow, 'GET, HEAD')
  } finally {
    await app.close()
  }
})
