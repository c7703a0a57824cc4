'use strict'

// fastify's repository for BENCH_DB / BENCH_ORM: the shared pools and raw-driver
// repositories (../../_jscommon/db.js) with this folder's pg and mysql2, or Drizzle
// (lib/orm.js) on the very same pools.

const { openPool, rawRepository } = require('../../_jscommon/db')

// Resolved here, in fastify's node_modules (pinned by its package-lock.json).
const DRIVERS = { pg: () => require('pg'), mysql: () => require('mysql2/promise') }

/** The repository with its pool fully open; null for BENCH_DB=none. */
async function openRepository (cfg) {
  const pool = await openPool(cfg, DRIVERS)
  if (pool === null || !cfg.orm) return rawRepository(cfg, pool)
  const orm = require('./orm')
  return cfg.db === 'postgres' ? new orm.PgDrizzleRepository(pool) : new orm.MysqlDrizzleRepository(pool)
}

module.exports = { openRepository }
