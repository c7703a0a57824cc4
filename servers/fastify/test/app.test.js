'use strict'

// Unit tests without a database: `npm test` in servers/fastify (after the build). The
// Node.js servers' shared HTTP-level tests (../../_jscommon/conformance.js) driven
// through fastify.inject(), and the WebSocket echo on a real socket; `npm test` also
// runs the shared code's own unit tests.

const path = require('node:path')
const { defineTests, defineWebsocketTests, response } = require('../../_jscommon/conformance')
const { buildApp } = require('../lib/app')

// The ws client: the ws @fastify/websocket itself requires (the one its lock pins).
const WebSocket = require(require.resolve('ws', { paths: [path.dirname(require.resolve('@fastify/websocket'))] }))

defineTests('fastify', async (cfg, repo) => {
  const app = buildApp(cfg, repo)
  await app.ready()
  async function call (method, url, { token = 'tok', body, headers = {} } = {}) {
    const res = await app.inject({
      method,
      url,
      headers: { ...(token === null ? {} : { token }), ...headers },
      payload: body
    })
    return response(res.statusCode, res.headers, res.rawPayload)
  }
  return {
    call,
    get: (url, token = 'tok') => call('GET', url, { token }),
    close: () => app.close()
  }
})

defineWebsocketTests('fastify', async (cfg) => {
  const app = buildApp(cfg, null)
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { port: app.server.address().port, close: () => app.close() }
}, WebSocket)
