'use strict'

// Unit tests without a database: `npm test` in servers/express (after the build). The
// Node.js servers' shared HTTP-level tests (../../_jscommon/conformance.js) against
// the express app on a real socket (127.0.0.1, an ephemeral port) with node:http; `npm
// test` also runs the shared code's own unit tests.

const test = require('node:test')
const assert = require('node:assert/strict')
const http = require('node:http')
const WebSocket = require('ws')
const { defineTests, defineWebsocketTests, response, CFG } = require('../../_jscommon/conformance')
const { buildServer } = require('../lib/app')

async function start (cfg, repo) {
  const srv = buildServer({ ...cfg, host: '127.0.0.1', port: 0 }, repo)
  await srv.listen()
  const port = srv.server.address().port
  const agent = new http.Agent({ keepAlive: true })
  // node:http rather than fetch: the path goes out as written ('..' and '%2e%2e' kept)
  function call (method, url, { token = 'tok', body, headers = {} } = {}) {
    return new Promise((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1', port, method, path: url, agent,
        headers: { ...(token === null ? {} : { token }), ...headers }
      }, (res) => {
        const chunks = []
        res.on('data', (c) => chunks.push(c))
        res.on('end', () => resolve(response(res.statusCode, res.headers, Buffer.concat(chunks))))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end(body)
    })
  }
  return {
    call,
    get: (url, token = 'tok') => call('GET', url, { token }),
    close: () => {
      agent.destroy()
      return srv.close()
    }
  }
}

defineTests('express', start)

defineWebsocketTests('express', async (cfg) => {
  const srv = buildServer({ ...cfg, host: '127.0.0.1', port: 0 }, null)
  await srv.listen()
  return { port: srv.server.address().port, close: () => srv.close() }
}, WebSocket)

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

test('upgrades: another protocol ignored (h2c: served as HTTP/1.1), a websocket on another path 404', async () => {
  const srv = buildServer({ ...CFG, serverId: 'express', name: 'express', host: '127.0.0.1', port: 0 }, null)
  await srv.listen()
  const port = srv.server.address().port
  // node:http resolves 'response' for a plain answer, 'upgrade' only for a 101
  const ask = (path, headers) => new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers: { token: 'tok', connection: 'Upgrade', ...headers } })
    req.on('response', (res) => {
      const chunks = []
      res.on('data', (c) => chunks.push(c))
      res.on('end', () => resolve(response(res.statusCode, res.headers, Buffer.concat(chunks))))
    })
    req.on('upgrade', () => reject(new Error(`${path}: upgraded`)))
    req.on('error', reject)
    req.end()
  })
  try {
    let r = await ask('/plain/?param1=a', { upgrade: 'h2c', 'http2-settings': 'AAMAAABkAAQAoAAAAAIAAAAA' })
    assert.equal(r.status, 200)
    assert.equal(r.text, 'param1=a, param2=, param3=')
    r = await ask('/plain/', { upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' })
    assert.equal(r.status, 404)
    assert.equal(typeof r.json.error, 'string')
  } finally {
    await srv.close()
  }
})
