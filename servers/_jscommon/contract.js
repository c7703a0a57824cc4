'use strict'

// The parts of the HTTP contract that depend neither on a framework nor on a driver
// (shared by the Node.js servers): the user id, the PATCH body, the user object and
// its timestamps, the database suite's n, ids and fortune order, the error bodies.
// Pure functions.

const { isUtf8 } = require('node:buffer')

const MAX_TEXT = 256 // varchar(256) / VARCHAR(256): both engines count code points
const MAX_USER_ID = 2147483647 // integer / INT

/** Path id: ASCII digits only (at most 10), 1..2147483647; anything else is null (-> 404). */
function parseUserId (raw) {
  if (typeof raw !== 'string') return null
  const n = raw.length
  if (n === 0 || n > 10) return null
  for (let i = 0; i < n; i++) {
    const c = raw.charCodeAt(i)
    if (c < 48 || c > 57) return null
  }
  const id = Number(raw)
  return id >= 1 && id <= MAX_USER_ID ? id : null
}

/** Code points of `s`, counting stops once past MAX_TEXT. */
function tooLong (s) {
  // .length counts UTF-16 units, never fewer than code points: only a string longer
  // than MAX_TEXT units can be over MAX_TEXT characters.
  if (s.length <= MAX_TEXT) return false
  let n = 0
  for (const _ of s) { // eslint-disable-line no-unused-vars
    if (++n > MAX_TEXT) return true
  }
  return false
}

/**
 * Why `value` cannot be stored in a varchar(256) column, or null if it can. Checked
 * here so the database never rejects a value (that would be a 5xx): PostgreSQL refuses
 * NUL, a lone surrogate ("\ud800" in JSON) has no UTF-8 form (the drivers would
 * silently store U+FFFD instead), and a longer value breaks varchar(256).
 */
function textProblem (value, allowEmpty) {
  if (typeof value !== 'string') return 'must be a string'
  if (value.length === 0 && !allowEmpty) return 'must not be empty'
  if (tooLong(value)) return `longer than ${MAX_TEXT} characters`
  if (value.includes('\0')) return 'contains a NUL character'
  if (!value.isWellFormed()) return 'is not valid Unicode text'
  return null
}

/**
 * The raw PATCH body (a Buffer, or undefined when there was none) -> {username, email},
 * or a string: the short reason it is a 400. A JSON object with "username" (non-empty
 * string) and "email" (string), both at most 256 characters; other keys are ignored.
 */
function parsePatchBody (body) {
  if (body === undefined || body === null || body.length === 0) return 'body is not valid JSON'
  if (!isUtf8(body)) return 'body is not valid UTF-8'
  let data
  try {
    data = JSON.parse(body.toString('utf8'))
  } catch {
    return 'body is not valid JSON'
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    return 'body must be a JSON object'
  }
  if (!Object.hasOwn(data, 'username') || !Object.hasOwn(data, 'email')) {
    return 'username and email are required'
  }
  const { username, email } = data
  let problem = textProblem(username, false)
  if (problem !== null) return `username ${problem}`
  problem = textProblem(email, true)
  if (problem !== null) return `email ${problem}`
  return { username, email }
}

/**
 * PostgreSQL timestamptz text (DateStyle ISO, the session runs with TimeZone=UTC):
 * '2024-01-01 00:00:01.123456+00' -> '2024-01-01T00:00:01.123456Z'. Kept as text so the
 * microseconds survive (a JS Date would cut them to milliseconds).
 */
function pgTimestamp (text) {
  const t = text.charCodeAt(10) === 32 ? `${text.slice(0, 10)}T${text.slice(11)}` : text
  if (t.endsWith('+00')) return `${t.slice(0, -3)}Z`
  if (/[+-]\d\d$/.test(t)) return `${t}:00`
  if (/[+-]\d\d:\d\d$/.test(t)) return t
  return new Date(text).toISOString() // unusual offset (+HH:MM:SS): never with TimeZone=UTC
}

/**
 * MySQL DATETIME(6) text ('2024-01-01 00:00:01.123456', read with dateStrings). The
 * column holds UTC (the harness's contract; writes use UTC_TIMESTAMP(6)): UTC is
 * attached, never shifted.
 */
function mysqlTimestamp (text) {
  return `${text.slice(0, 10)}T${text.slice(11)}Z`
}

/** The contract's user object: exactly these six keys. */
function user (userId, username, email, createdAt, updatedAt, isArchived) {
  return {
    user_id: userId,
    username,
    email,
    created_at: createdAt,
    updated_at: updatedAt,
    is_archived: isArchived
  }
}

/** param1..3 of a parsed query string: the first occurrence wins, absent is undefined. */
function queryParam (query, name) {
  const v = query[name]
  if (v === undefined || typeof v === 'string') return v
  return Array.isArray(v) ? String(v[0]) : String(v)
}

// ------------------------------------------------------ the database suite (section 6)

const N_MAX = 500
const ROW_COUNT = 10000 // users.user_id is 1..10000
const MAX_RANDOM_NUMBER = 1000000 // /updates/ usernames: "u" + 1..1000000

/**
 * The suite's `n` (first occurrence of the query parameter): ASCII digits only, clamped
 * to 1..500; missing, empty or anything else ("abc", "-3", "1.5", " 1") is 1. Digits
 * are accumulated only up to 500, so a long digit string is 500, never an overflow.
 */
function parseCount (raw) {
  if (typeof raw !== 'string' || raw.length === 0) return 1
  let n = 0
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i)
    if (c < 48 || c > 57) return 1
    if (n <= N_MAX) n = n * 10 + (c - 48)
  }
  return n === 0 ? 1 : Math.min(n, N_MAX)
}

/** A user id drawn uniformly from 1..10000. */
function randomId () {
  return 1 + Math.floor(Math.random() * ROW_COUNT)
}

/** `n` distinct user ids (n <= 500 of 10000: a few redraws at most). */
function distinctIds (n) {
  const ids = new Set()
  while (ids.size < n) ids.add(randomId())
  return [...ids]
}

/** The username /updates/ writes: "u" + a random integer 1..1000000. */
function randomUsername () {
  return `u${1 + Math.floor(Math.random() * MAX_RANDOM_NUMBER)}`
}

/**
 * Code-point order of two strings. JavaScript's `<` compares UTF-16 code units, which
 * differs from code-point order only where one string has a surrogate (a character
 * above U+FFFF) and the other a unit in U+E000..U+FFFF at the first difference; the
 * fortunes happen not to have such a pair, but the order is exact anyway.
 */
function compareCodePoints (a, b) {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i)
    let y = b.charCodeAt(i)
    if (x === y) continue
    // surrogates (D800..DFFF) move above E000..FFFF; E000..FFFF move down below them
    if (x >= 0xD800) x += x < 0xE000 ? 0x2000 : -0x800
    if (y >= 0xD800) y += y < 0xE000 ? 0x2000 : -0x800
    return x - y
  }
  return a.length - b.length
}

/** The fortunes as rendered: the table's rows plus the one added at request time, sorted. */
function prepareFortunes (rows) {
  const fortunes = rows.map((r) => ({ id: r.id, message: r.message }))
  fortunes.push({ id: 0, message: 'A fortune added at request time.' })
  return fortunes.sort((a, b) => compareCodePoints(a.message, b.message))
}

// The answers' Content-Types, and the largest PATCH body read (two strings of at most
// 256 characters fit many times over).
const JSON_TYPE = 'application/json; charset=utf-8'
const TEXT_TYPE = 'text/plain; charset=utf-8'
const MAX_BODY = 64 * 1024

// The contract's error bodies, serialised once.
const errorBody = (reason) => JSON.stringify({ error: reason })
const ERRORS = Object.freeze({
  token: errorBody('invalid token'),
  notFound: errorBody('not found'),
  noDatabase: errorBody('no database'),
  method: errorBody('method not allowed'),
  database: errorBody('database error'),
  internal: errorBody('internal error')
})

module.exports = {
  MAX_TEXT,
  MAX_USER_ID,
  parseUserId,
  textProblem,
  parsePatchBody,
  pgTimestamp,
  mysqlTimestamp,
  user,
  queryParam,
  N_MAX,
  ROW_COUNT,
  parseCount,
  randomId,
  distinctIds,
  randomUsername,
  compareCodePoints,
  prepareFortunes,
  JSON_TYPE,
  TEXT_TYPE,
  MAX_BODY,
  errorBody,
  ERRORS
}
