'use strict'

// express 5 server for the web-framework benchmark harness (servers/README.md).
// The process model (node:cluster primary, BENCH_WORKERS workers, each with its own
// pool; readiness and SIGTERM) is the Node.js servers' shared one:
// ../_jscommon/cluster.js. Here: the raw-driver repository and the express app, plus
// the TLS (h1-tls) listener when the harness asks (./lib/listeners.js).
// express has no ORM of its own: raw drivers only (pg, mysql2).

const { run } = require('../_jscommon/cluster')
const { openPool, rawRepository } = require('../_jscommon/db')
const { tlsListenerFromEnv, ListenerConfigError } = require('./lib/listeners')

// Resolved here, in express's node_modules (pinned by its package-lock.json).
const DRIVERS = { pg: () => require('pg'), mysql: () => require('mysql2/promise') }

// Read (and the certificate checked) in the primary and in every worker, before any
// of them listens.
let tls
try {
  tls = tlsListenerFromEnv(process.env)
} catch (err) {
  if (!(err instanceof ListenerConfigError)) throw err
  console.error(`express: configuration error: ${err.message}`)
  process.exit(2)
}

run({
  name: 'express',
  openRepository: async (cfg) => rawRepository(cfg, await openPool(cfg, DRIVERS)),
  // Each worker listens on each port, shared by node:cluster like the main one.
  buildServer: async (cfg, repo) => require('./lib/app').buildServer(cfg, repo, { tls })
})
