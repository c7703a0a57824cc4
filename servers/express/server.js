'use strict'

// express 5 server for the web-framework benchmark harness (servers/README.md).
// The process model (node:cluster primary, BENCH_WORKERS workers, each with its own
// pool; readiness and SIGTERM) is the Node.js servers' shared one:
// ../_jscommon/cluster.js. Here: the raw-driver repository and the express app.
// express has no ORM of its own: raw drivers only (pg, mysql2).

const { run } = require('../_jscommon/cluster')
const { openPool, rawRepository } = require('../_jscommon/db')

// Resolved here, in express's node_modules (pinned by its package-lock.json).
const DRIVERS = { pg: () => require('pg'), mysql: () => require('mysql2/promise') }

run({
  name: 'express',
  openRepository: async (cfg) => rawRepository(cfg, await openPool(cfg, DRIVERS)),
  buildServer: async (cfg, repo) => require('./lib/app').buildServer(cfg, repo)
})
