'use strict'

// Unit tests without a database: `npm test` in servers/fastify (after the build). The
// Node.js servers' shared HTTP-level tests (../../_jscommon/conformance.js) driven
// through fastify.inject(); `npm test` also runs the shared code's own unit tests.

const { defineTests, response } = require('../../_jscommon/conformance')
const { buildApp } = require('../lib/app')

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
