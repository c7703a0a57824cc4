'use strict'

// The parts of the HTTP contract that do not depend on fastify or on a driver: the
// user id, the PATCH body, the user object and its timestamps. Pure functions.

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

// JSON Schemas for fastify's compiled serializers (fast-json-stringify).
const USER_SCHEMA = {
  type: 'object',
  properties: {
    user_id: { type: 'integer' },
    username: { type: 'string' },
    email: { type: ['string', 'null'] },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
    is_archived: { type: 'boolean' }
  },
  required: ['user_id', 'username', 'email', 'created_at', 'updated_at', 'is_archived'],
  additionalProperties: false
}

const PARAMS_SCHEMA = {
  type: 'object',
  properties: {
    param1: { type: ['string', 'null'] },
    param2: { type: ['string', 'null'] },
    param3: { type: ['string', 'null'] }
  },
  required: ['param1', 'param2', 'param3'],
  additionalProperties: false
}

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
  USER_SCHEMA,
  PARAMS_SCHEMA
}
