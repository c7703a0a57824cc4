'use strict'

// fastify 5 server for the web-framework benchmark harness (servers/README.md).
// The process model (node:cluster primary, BENCH_WORKERS workers, each with its own
// pool; readiness and SIGTERM) is the Node.js servers' shared one:
// ../_jscommon/cluster.js. Here: the repository (raw or Drizzle) and the fastify app.

const { run } = require('../_jscommon/cluster')

run({
  name: 'fastify',
  openRepository: (cfg) => require('./lib/db').openRepository(cfg),
  async buildServer (cfg, repo) {
    const app = require('./lib/app').buildApp(cfg, repo)
    await app.ready() // routes registered and response serialisers compiled
    return {
      listen: () => app.listen({ host: cfg.host, port: cfg.port }),
      close: () => app.close() // stop accepting, close idle keep-alive sockets
    }
  }
})
