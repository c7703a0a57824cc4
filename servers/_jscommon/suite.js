'use strict'

// The database suite (CONTRACT.md section 6) without a framework: what /queries/,
// /updates/, /fortunes/ and /cached/ send to a repository and answer, for every
// Node.js server. Each statement is awaited before the next (one in flight per
// request, no pipelining), the updates are per-row in autocommit, as the servers'
// manifests declare ([suite]). A repository error propagates: the server's handler
// turns it into a JSON 500.

const path = require('node:path')
const { randomId, distinctIds, randomUsername, prepareFortunes, ROW_COUNT } = require('./contract')

/** The fortunes template (eta: <%= %> escapes & < > " '), shared by the servers. */
const TEMPLATES_DIR = path.join(__dirname, 'templates')
const FORTUNES_TEMPLATE = 'fortunes'

/** /cached/'s cache: room for all the rows, no ttl (lru-cache options). */
const CACHE_OPTIONS = Object.freeze({ max: ROW_COUNT })

/** /queries/: N SELECTs by primary key of random ids, one after another. */
async function queries (repo, n) {
  const found = []
  for (let i = 0; i < n; i++) {
    const row = await repo.getUser(randomId())
    if (row !== null) found.push(row)
  }
  return found
}

/**
 * /updates/: N distinct rows read (N SELECTs), then N single-row UPDATEs in ascending
 * id order; the answer is each row as written.
 */
async function updates (repo, n) {
  const written = []
  for (const id of distinctIds(n)) {
    const row = await repo.getUser(id)
    if (row !== null) written.push(row)
  }
  // The server's UTC time (a JS Date: milliseconds), bound as a parameter.
  const stamp = new Date().toISOString()
  written.sort((a, b) => a.user_id - b.user_id)
  for (const row of written) {
    row.username = randomUsername()
    row.updated_at = stamp
    await repo.setUsername(row.user_id, row.username, stamp)
  }
  return written
}

/** /fortunes/: one SELECT of the table, the request-time fortune added, sorted. */
async function fortunes (repo) {
  return prepareFortunes(await repo.fortunes())
}

/**
 * /cached/: N random ids from `cache` (an LRUCache of this process: every worker
 * process fills its own); a miss is one SELECT by primary key, then cached.
 */
async function cached (cache, repo, n) {
  const found = []
  for (let i = 0; i < n; i++) {
    const id = randomId()
    let row = cache.get(id)
    if (row === undefined) {
      row = await repo.getUser(id)
      if (row === null) continue
      cache.set(id, row)
    }
    found.push(row)
  }
  return found
}

module.exports = { TEMPLATES_DIR, FORTUNES_TEMPLATE, CACHE_OPTIONS, queries, updates, fortunes, cached }
