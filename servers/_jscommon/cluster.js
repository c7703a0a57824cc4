'use strict'

// The process model of every Node.js server of the harness (servers/README.md), with
// no framework in it: a node:cluster primary forks BENCH_WORKERS workers and serves
// nothing itself. Each worker opens its own database pool (all BENCH_DB_POOL_SIZE
// connections) and builds its app, then reports ready; only when every worker is ready
// does the primary tell them to listen, so by the time GET /ping/ answers, every
// connection of the budget is open. A worker that dies is not replaced: the primary
// stops the others and exits non-zero, so the harness sees a failed server instead of
// measuring W-1 workers. SIGTERM (or SIGINT): the primary forwards it to the workers
// and exits once they have; a worker closes its server (stops accepting, closes idle
// keep-alive connections), then its pool.
//
// A server's server.js calls run() with what is its own:
//   openRepository(cfg) -> Promise<repository | null>   (null: BENCH_DB=none)
//   buildServer(cfg, repo) -> Promise<{ listen(): Promise, close(): Promise }>

const cluster = require('node:cluster')
const { fromEnv, ConfigError } = require('./config')

// Worker: graceful close at most this long, then exit anyway.
const WORKER_STOP_MS = 2000
// Primary: workers still alive this long after SIGTERM are killed.
const PRIMARY_STOP_MS = 3000

function loadConfig (name) {
  try {
    return fromEnv(name)
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`${name}: configuration error: ${err.message}`)
      process.exit(2)
    }
    throw err
  }
}

// ----------------------------------------------------------------------- primary

function runPrimary (cfg) {
  // Round-robin: the primary accepts connections and hands them to the workers in
  // turn (Node's default on Linux, stated): wrk's persistent connections end up evenly
  // spread over the workers instead of piling on whichever wakes first.
  cluster.schedulingPolicy = cluster.SCHED_RR

  let stopping = false
  let exitCode = 0
  let ready = 0

  const workers = []
  for (let i = 0; i < cfg.workers; i++) {
    const worker = cluster.fork()
    workers.push(worker)
    worker.on('message', (msg) => {
      if (msg === 'ready' && ++ready === cfg.workers && !stopping) {
        for (const w of workers) if (w.isConnected()) w.send('listen')
      }
    })
  }

  function stopAll (signal) {
    if (stopping) return
    stopping = true
    for (const w of workers) {
      if (!w.isDead()) w.process.kill(signal)
    }
    setTimeout(() => {
      for (const w of workers) if (!w.isDead()) w.process.kill('SIGKILL')
      process.exit(exitCode || 1)
    }, PRIMARY_STOP_MS).unref()
  }

  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) {
      console.error(`${cfg.name}: worker ${worker.process.pid} exited (code ${code}, signal ${signal}); ` +
        'not restarting during a benchmark: stopping the server')
      exitCode = 1
      stopAll('SIGTERM')
    }
    if (workers.every((w) => w.isDead())) process.exit(exitCode)
  })

  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => stopAll('SIGTERM'))
  }
}

// ------------------------------------------------------------------------ worker

async function runWorker (cfg, openRepository, buildServer) {
  let repo = null
  let app = null
  let stopping = false

  async function stop () {
    if (stopping) return
    stopping = true
    setTimeout(() => process.exit(0), WORKER_STOP_MS).unref()
    try {
      if (app !== null) await app.close() // stop accepting, close idle keep-alive sockets
    } catch (err) {
      console.error(`${cfg.name}: close failed: ${err.message}`)
    }
    try {
      if (repo !== null) await repo.close() // persistent connections closed, not dropped
    } catch (err) {
      console.error(`${cfg.name}: pool close failed: ${err.message}`)
    }
    process.exit(0)
  }
  // The harness signals the whole process group, so a worker hears SIGTERM from it
  // and again from the primary: both start the same single stop.
  process.on('SIGTERM', stop)
  process.on('SIGINT', stop)

  try {
    repo = await openRepository(cfg)
  } catch (err) {
    console.error(`${cfg.name}: cannot open the ${cfg.db} pool: ${err.message}`)
    process.exit(1)
  }
  if (stopping) return
  app = await buildServer(cfg, repo) // routes registered, templates and serialisers compiled

  await new Promise((resolve) => {
    process.on('message', (msg) => { if (msg === 'listen') resolve() })
    process.send('ready')
  })
  if (stopping) return
  await app.listen()
}

// -------------------------------------------------------------------------- main

/** Start the primary or, in a forked process, a worker. `name`: the framework. */
function run ({ name, openRepository, buildServer }) {
  const cfg = loadConfig(name)
  if (cluster.isPrimary) {
    runPrimary(cfg)
  } else {
    runWorker(cfg, openRepository, buildServer).catch((err) => {
      console.error(`${name}: worker failed to start: ${err && err.stack}`)
      process.exit(1)
    })
  }
}

module.exports = { run }
