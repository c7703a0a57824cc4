'use strict'

// The ORM variant: Drizzle ORM over the same pg / mysql2 pools as the raw variant
// (lib/db.js). The users table is declared with Drizzle's schema builders and every
// request builds its query with Drizzle's query builder, as ordinary Drizzle code does
// (no .prepare(): see the manifest's [notes].orm). Values are bound parameters, no
// transaction is opened: each statement runs in autocommit.

const { eq, sql } = require('drizzle-orm')
const { pgTimestamp, mysqlTimestamp, user } = require('../../_jscommon/contract')
const { withTimeout, mysqlDatetime, CLOSE_TIMEOUT_MS } = require('../../_jscommon/db')

// SQL fragments for updated_at, built once (they hold no values).
const PG_NOW = sql`now()`
const MYSQL_NOW = sql`UTC_TIMESTAMP(6)`

function toUser (row, stamp) {
  return user(row.userId, row.username, row.email, stamp(row.createdAt), stamp(row.updatedAt),
    row.isArchived)
}

// ------------------------------------------------------------------ PostgreSQL

class PgDrizzleRepository {
  constructor (pool) {
    const { drizzle } = require('drizzle-orm/node-postgres')
    const { pgTable, integer, varchar, timestamp, boolean } = require('drizzle-orm/pg-core')

    // mode 'string': Drizzle hands timestamptz over as PostgreSQL's text, microseconds
    // included (mode 'date' would build a millisecond JS Date).
    const stamp = (name) => timestamp(name, { withTimezone: true, precision: 6, mode: 'string' })
    const users = pgTable('users', {
      userId: integer('user_id').primaryKey(),
      username: varchar('username', { length: 256 }).notNull(),
      email: varchar('email', { length: 256 }),
      createdAt: stamp('created_at').notNull(),
      updatedAt: stamp('updated_at').notNull(),
      isArchived: boolean('is_archived').notNull().default(false)
    })
    const fortune = pgTable('fortune', {
      id: integer('id').primaryKey(),
      message: varchar('message', { length: 2048 }).notNull()
    })

    this.pool = pool
    this.users = users
    this.fortune = fortune
    this.db = drizzle({ client: pool })
  }

  async getUser (id) {
    const { db, users } = this
    const rows = await db.select().from(users).where(eq(users.userId, id))
    return rows.length === 0 ? null : toUser(rows[0], pgTimestamp)
  }

  async updateUser (id, username, email) {
    const { db, users } = this
    // One UPDATE ... RETURNING: Drizzle's .returning() on PostgreSQL.
    const rows = await db.update(users)
      .set({ username, email, updatedAt: PG_NOW })
      .where(eq(users.userId, id))
      .returning()
    return rows.length === 0 ? null : toUser(rows[0], pgTimestamp)
  }

  // /updates/: one single-row UPDATE through Drizzle's update builder; `stamp` is the
  // server's UTC time as ISO text (timestamp mode 'string' binds it as it is).
  async setUsername (id, username, stamp) {
    const { db, users } = this
    await db.update(users).set({ username, updatedAt: stamp }).where(eq(users.userId, id))
  }

  // /fortunes/: select().from(fortune), one SELECT of both columns.
  fortunes () {
    return this.db.select().from(this.fortune)
  }

  close () { return withTimeout(this.pool.end(), CLOSE_TIMEOUT_MS) }
}

// ------------------------------------------------------------------------ MySQL

class MysqlDrizzleRepository {
  constructor (pool) {
    const { drizzle } = require('drizzle-orm/mysql2')
    const { mysqlTable, int, varchar, datetime, boolean } = require('drizzle-orm/mysql-core')

    // mode 'string': Drizzle reads DATETIME as text (its own typeCast), microseconds kept;
    // the value is UTC and contract.mysqlTimestamp attaches the offset.
    const stamp = (name) => datetime(name, { fsp: 6, mode: 'string' })
    const users = mysqlTable('users', {
      userId: int('user_id').primaryKey().autoincrement(),
      username: varchar('username', { length: 256 }).notNull(),
      email: varchar('email', { length: 256 }),
      createdAt: stamp('created_at').notNull(),
      updatedAt: stamp('updated_at').notNull(),
      isArchived: boolean('is_archived').notNull().default(false)
    })
    const fortune = mysqlTable('fortune', {
      id: int('id').primaryKey(),
      message: varchar('message', { length: 2048 }).notNull()
    })

    this.pool = pool
    this.users = users
    this.fortune = fortune
    this.db = drizzle({ client: pool }) // mode 'default' (not PlanetScale) is implied
  }

  async getUser (id) {
    const { db, users } = this
    const rows = await db.select().from(users).where(eq(users.userId, id))
    return rows.length === 0 ? null : toUser(rows[0], mysqlTimestamp)
  }

  async updateUser (id, username, email) {
    const { db, users } = this
    // No RETURNING in MySQL: one UPDATE (affectedRows counts matched rows, FOUND_ROWS),
    // then one SELECT. UTC_TIMESTAMP(6): the column holds UTC.
    const [result] = await db.update(users)
      .set({ username, email, updatedAt: MYSQL_NOW })
      .where(eq(users.userId, id))
    if (result.affectedRows === 0) return null // unknown user: 404 without a SELECT
    return this.getUser(id)
  }

  // /updates/: one single-row UPDATE through Drizzle's update builder; datetime mode
  // 'string' binds DATETIME text, so the ISO stamp becomes 'YYYY-MM-DD HH:MM:SS.mmm'.
  async setUsername (id, username, stamp) {
    const { db, users } = this
    await db.update(users).set({ username, updatedAt: mysqlDatetime(stamp) }).where(eq(users.userId, id))
  }

  // /fortunes/: select().from(fortune), one SELECT of both columns.
  fortunes () {
    return this.db.select().from(this.fortune)
  }

  close () { return withTimeout(this.pool.end(), CLOSE_TIMEOUT_MS) }
}

module.exports = { PgDrizzleRepository, MysqlDrizzleRepository }
