'use strict'

// One connection pool per worker process (concurrency = "processes": BENCH_DB_POOL_SIZE
// is this process's share of the budget), every connection opened before the worker
// listens, and the raw-driver repositories, for every Node.js server. fastify's
// lib/orm.js builds its Drizzle repositories on the very same pools.
//
// The drivers (pg, mysql2) are the server's own dependencies, pinned by its
// package-lock.json and installed in its node_modules: this folder has no
// node_modules, so each server hands its driver modules in (`drivers`, below).

const { pgTimestamp, mysqlTimestamp, user } = require('./contract')

const COLUMNS = 'user_id, username, email, created_at, updated_at, is_archived'

// At shutdown, never let a pool's close hold the stop longer than this.
const CLOSE_TIMEOUT_MS = 1500

function withTimeout (promise, ms) {
  let timer
  return Promise.race([
    promise,
    new Promise((resolve) => { timer = setTimeout(resolve, ms); timer.unref() })
  ]).finally(() => clearTimeout(timer))
}

// ------------------------------------------------------------------ PostgreSQL

const TIMESTAMPTZ_OID = 1184

async function openPgPool (cfg, pg) {
  // timestamptz stays text (see contract.pgTimestamp): a Date would lose microseconds.
  const types = {
    getTypeParser (oid, format) {
      if (oid === TIMESTAMPTZ_OID) return (text) => text
      return pg.types.getTypeParser(oid, format)
    }
  }
  const pool = new pg.Pool({
    host: cfg.dbHost,
    port: cfg.dbPort,
    database: cfg.dbName,
    user: cfg.dbUser,
    password: cfg.dbPassword,
    ssl: false, // local benchmark database; no PGSSLMODE surprise from the environment
    application_name: `webbench-${cfg.name}`,
    // Startup parameter, not a statement: timestamptz comes back as UTC text.
    options: '-c TimeZone=UTC',
    types,
    max: cfg.poolSize, // this process's share of the connection budget
    min: cfg.poolSize, // never shrink below it ...
    idleTimeoutMillis: 0, // ... nor close idle connections (pg-pool's default: 10 s)
    maxLifetimeSeconds: 0, // no recycling during a run
    connectionTimeoutMillis: 30000, // a request waits up to 30 s for a free connection
    allowExitOnIdle: false
  })
  // An idle connection that breaks emits 'error' on the pool; unhandled it would kill
  // the worker. The pool drops that connection and opens a new one on demand.
  pool.on('error', (err) => console.error(`${cfg.name}: idle PostgreSQL connection error: ${err.message}`))
  await openAll(pool.connect.bind(pool), cfg.poolSize, (client) => client.release())
  return pool
}

/** Check out `size` connections at once (each forces a new one), then give them all back. */
async function openAll (acquire, size, release) {
  const settled = await Promise.allSettled(Array.from({ length: size }, () => acquire()))
  for (const s of settled) if (s.status === 'fulfilled') release(s.value)
  const failed = settled.find((s) => s.status === 'rejected')
  if (failed) throw failed.reason
}

function pgUser (row) {
  return user(row.user_id, row.username, row.email, pgTimestamp(row.created_at),
    pgTimestamp(row.updated_at), row.is_archived)
}

class PgRawRepository {
  // Named statements: pg parses each once per connection, then only binds and executes
  // (like asyncpg's and sqlx's statement caches). Values are always bound parameters.
  static GET = `SELECT ${COLUMNS} FROM users WHERE user_id = $1`
  // One statement: RETURNING answers the row as stored after the update.
  static UPDATE = 'UPDATE users SET username = $2, email = $3, updated_at = now() ' +
    `WHERE user_id = $1 RETURNING ${COLUMNS}`
  // The database suite (CONTRACT.md section 6).
  static SUITE_UPDATE = 'UPDATE users SET username = $1, updated_at = $2 WHERE user_id = $3'
  static FORTUNES = 'SELECT id, message FROM fortune'

  constructor (pool) { this.pool = pool }

  async getUser (id) {
    const res = await this.pool.query({ name: 'get_user', text: PgRawRepository.GET, values: [id] })
    return res.rows.length === 0 ? null : pgUser(res.rows[0])
  }

  async updateUser (id, username, email) {
    const res = await this.pool.query({
      name: 'update_user', text: PgRawRepository.UPDATE, values: [id, username, email]
    })
    return res.rows.length === 0 ? null : pgUser(res.rows[0])
  }

  // /updates/: one single-row UPDATE, the time taken in the server as a bound value.
  async setUsername (id, username, stamp) {
    await this.pool.query({
      name: 'suite_update', text: PgRawRepository.SUITE_UPDATE, values: [username, stamp, id]
    })
  }

  // /fortunes/: the whole table in one SELECT.
  async fortunes () {
    const res = await this.pool.query({ name: 'fortunes', text: PgRawRepository.FORTUNES })
    return res.rows
  }

  close () { return withTimeout(this.pool.end(), CLOSE_TIMEOUT_MS) }
}

// ------------------------------------------------------------------------ MySQL

async function openMysqlPool (cfg, mysql) {
  const pool = mysql.createPool({
    host: cfg.dbHost,
    port: cfg.dbPort,
    database: cfg.dbName,
    user: cfg.dbUser,
    password: cfg.dbPassword,
    connectionLimit: cfg.poolSize, // this process's share of the connection budget
    maxIdle: cfg.poolSize, // = connectionLimit: no idle connection is ever closed
    waitForConnections: true, // under load a request queues for a connection ...
    queueLimit: 0, // ... without a cap, rather than failing
    charset: 'utf8mb4', // any valid Unicode string fits the utf8mb4 table
    timezone: 'Z', // DATETIME holds UTC (only matters if a Date were ever sent or built)
    dateStrings: true, // DATETIME(6) as text: microseconds kept, no local-time shift
    // mysql2's default, stated: an UPDATE's affectedRows counts matched rows, not
    // changed ones, so 0 means "no such user".
    flags: ['FOUND_ROWS']
  })
  await openAll(() => pool.getConnection(), cfg.poolSize, (conn) => conn.release())
  return pool
}

function mysqlUser (row) {
  return user(row.user_id, row.username, row.email, mysqlTimestamp(row.created_at),
    mysqlTimestamp(row.updated_at), row.is_archived === 1 || row.is_archived === true)
}

/** '2026-05-04T12:34:56.789Z' (Date#toISOString) -> '2026-05-04 12:34:56.789' (DATETIME, UTC). */
function mysqlDatetime (iso) {
  return `${iso.slice(0, 10)} ${iso.slice(11, -1)}`
}

class MysqlRawRepository {
  // pool.execute: server-side prepared statements (binary protocol), prepared once per
  // connection and cached by mysql2, values bound by the server.
  static GET = `SELECT ${COLUMNS} FROM users WHERE user_id = ?`
  // No UPDATE ... RETURNING in MySQL/MariaDB: one UPDATE, then one SELECT. The column
  // holds UTC whatever the session time zone: UTC_TIMESTAMP(6).
  static UPDATE = 'UPDATE users SET username = ?, email = ?, updated_at = UTC_TIMESTAMP(6) WHERE user_id = ?'
  // The database suite (CONTRACT.md section 6).
  static SUITE_UPDATE = 'UPDATE users SET username = ?, updated_at = ? WHERE user_id = ?'
  static FORTUNES = 'SELECT id, message FROM fortune'

  constructor (pool) { this.pool = pool }

  async getUser (id) {
    const [rows] = await this.pool.execute(MysqlRawRepository.GET, [id])
    return rows.length === 0 ? null : mysqlUser(rows[0])
  }

  async updateUser (id, username, email) {
    // Both statements on one connection (autocommit: no BEGIN/COMMIT around them).
    const conn = await this.pool.getConnection()
    try {
      const [result] = await conn.execute(MysqlRawRepository.UPDATE, [username, email, id])
      if (result.affectedRows === 0) return null // unknown user: 404 without a SELECT
      const [rows] = await conn.execute(MysqlRawRepository.GET, [id])
      return rows.length === 0 ? null : mysqlUser(rows[0])
    } finally {
      conn.release()
    }
  }

  // /updates/: one single-row UPDATE; `stamp` is the server's UTC time (ISO 8601, Z),
  // written as DATETIME text.
  async setUsername (id, username, stamp) {
    await this.pool.execute(MysqlRawRepository.SUITE_UPDATE, [username, mysqlDatetime(stamp), id])
  }

  // /fortunes/: the whole table in one SELECT.
  async fortunes () {
    const [rows] = await this.pool.execute(MysqlRawRepository.FORTUNES)
    return rows
  }

  close () { return withTimeout(this.pool.end(), CLOSE_TIMEOUT_MS) }
}

// --------------------------------------------------------------------- opening

/**
 * The pool for BENCH_DB with every connection open, or null for 'none'. `drivers`:
 * { pg: () => require('pg'), mysql: () => require('mysql2/promise') }, called in the
 * server's folder so its node_modules resolve them (only the one in use is loaded).
 */
async function openPool (cfg, drivers) {
  if (cfg.db === 'none') return null
  return cfg.db === 'postgres' ? openPgPool(cfg, drivers.pg()) : openMysqlPool(cfg, drivers.mysql())
}

/** The raw-driver repository on `pool` (null for BENCH_DB=none). */
function rawRepository (cfg, pool) {
  if (pool === null) return null
  return cfg.db === 'postgres' ? new PgRawRepository(pool) : new MysqlRawRepository(pool)
}

module.exports = {
  openPool, rawRepository, PgRawRepository, MysqlRawRepository, withTimeout, mysqlDatetime,
  CLOSE_TIMEOUT_MS, COLUMNS
}
