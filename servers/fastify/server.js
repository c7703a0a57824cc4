'use strict'

// fastify 5 server for the web-framework benchmark harness (servers/README.md).
// The process model (node:cluster primary, BENCH_WORKERS workers, each with its own
// pool; readiness and SIGTERM) is the Node.js servers' shared one:
// ../_jscommon/cluster.js. Here: the repository (raw or Drizzle) and the fastify app,
// plus the TLS (h1-tls, h2) and h2c listeners when the harness asks (./lib/listeners.js).

const { run } = require('../_jscommon/cluster')
const { listenersFromEnv, ListenerConfigError } = require('./lib/listeners')

// Read (and the certificate checked) in the primary and in every worker, before any
// of them listens.
let listeners
try {
  listeners = listenersFromEnv(process.env)
} catch (err) {
  if (!(err instanceof ListenerConfigError)) throw err
  console.error(`fastify: configuration error: ${err.message}`)
  process.exit(2)
}

run({
  name: 'fastify',
  openRepository: (cfg) => require('./lib/db').openRepository(cfg),
  async buildServer (cfg, repo) {
    const { buildApp, newCache } = require('./lib/app')
    const cache = newCache() // one /cached/ cache per process, whichever listener asks
    const app = buildApp(cfg, repo, { cache })
    // The same routes and handlers on every other listener: an app of its own each,
    // over the same repository (pool) and cache.
    const others = listeners.map((l) => ({ ...l, app: buildApp(cfg, repo, { serverOptions: l.serverOptions, cache }) }))
    const apps = [app, ...others.map((o) => o.app)]
    await Promise.all(apps.map((a) => a.ready())) // routes registered and response serialisers compiled
    return {
      // The other listeners first: by the time /ping/ answers on BENCH_PORT they are
      // open. Each worker listens on each port, shared by node:cluster like the main one.
      async listen () {
        await Promise.all(others.map((o) => o.app.listen({ host: cfg.host, port: o.port })))
        await app.listen({ host: cfg.host, port: cfg.port })
      },
      // stop accepting, close idle keep-alive sockets (HTTP/2: GOAWAY), on every listener
      close: () => Promise.all(apps.map((a) => a.close()))
    }
  }
})
