'use strict'

// The harness's BENCH_* environment (servers/README.md), read once per process, for
// every Node.js server. Nothing here is hard-coded: workers, pool size and addresses
// all come from it.

const DATABASES = ['postgres', 'mysql', 'none']

class ConfigError extends Error {}

function positiveInt (env, name, fallback) {
  const raw = env[name]
  if (raw === undefined || raw === '') {
    if (fallback === undefined) throw new ConfigError(`${name} is required`)
    return fallback
  }
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1 || !Number.isSafeInteger(Number(raw))) {
    throw new ConfigError(`${name} must be a positive integer, got ${JSON.stringify(raw)}`)
  }
  return Number(raw)
}

/** `name`: the server's id when BENCH_SERVER_ID is not set (a manual start). */
function fromEnv (name, env = process.env) {
  const db = env.BENCH_DB || 'none'
  if (!DATABASES.includes(db)) {
    throw new ConfigError(`BENCH_DB must be one of ${DATABASES.join(', ')}, got ${JSON.stringify(db)}`)
  }
  const port = positiveInt(env, 'BENCH_PORT')
  if (port > 65535) throw new ConfigError(`BENCH_PORT ${port} is not a port`)
  return Object.freeze({
    serverId: env.BENCH_SERVER_ID || name,
    name, // the framework, for log lines
    host: env.BENCH_HOST || '127.0.0.1',
    port,
    workers: positiveInt(env, 'BENCH_WORKERS', 1),
    token: env.BENCH_TOKEN ?? '',
    db,
    orm: env.BENCH_ORM === '1',
    dbHost: env.BENCH_DB_HOST || '127.0.0.1',
    dbPort: db === 'none' ? 0 : positiveInt(env, 'BENCH_DB_PORT', db === 'postgres' ? 5432 : 3306),
    dbName: env.BENCH_DB_NAME || 'webservers_bench',
    dbUser: env.BENCH_DB_USER || 'bench',
    dbPassword: env.BENCH_DB_PASSWORD || '',
    poolSize: positiveInt(env, 'BENCH_DB_POOL_SIZE', 1),
    // The HTTP workloads: the folder /static/ serves (unset: no /static/ at all), and
    // the framework's response compression on (BENCH_COMPRESSION=1) or absent.
    staticDir: env.BENCH_STATIC_DIR || null,
    compression: env.BENCH_COMPRESSION === '1'
  })
}

module.exports = { fromEnv, ConfigError }
