'use strict'

// The HTTP workloads' parts that depend on no framework (servers/README.md, "The HTTP
// workloads"), shared by the Node.js servers: /upload/'s limit and its body streamed
// through zlib's CRC-32, /delay/'s timer and body. /static/ and compression are each
// framework's own handler and middleware (its app says which).

const zlib = require('node:zlib')
const { setTimeout: sleep } = require('node:timers/promises')
const { errorBody } = require('./contract')

const MAX_UPLOAD = 8 * 1024 * 1024 // 8 MiB: every size up to it is accepted, one byte more is a 413
const UPLOAD_TOO_LARGE = errorBody(`body too large (max ${MAX_UPLOAD} bytes)`)
const UPLOAD_ABORTED = errorBody('request body aborted')
const UPLOAD_ALLOW = ['POST'] // /upload/'s methods; every other one is a 405

const DELAY_MS = 10
const DELAY_BODY = 'delayed 10 ms'

/** A Content-Length above the limit: refused before a byte of the body is read. */
function declaredTooLarge (headers) {
  const declared = headers['content-length']
  return declared !== undefined && Number(declared) > MAX_UPLOAD
}

/** {"bytes": N, "crc32": "xxxxxxxx"}: the CRC as 8 lowercase hex digits. */
function uploadBody (bytes, crc) {
  return JSON.stringify({ bytes, crc32: crc.toString(16).padStart(8, '0') })
}

/**
 * Read the request body `stream` (an http.IncomingMessage or Http2ServerRequest) chunk
 * by chunk through zlib.crc32 (Node.js >= 20.15: the very zlib CRC-32 Python's
 * zlib.crc32 computes), nothing kept. Resolves to the answer's JSON body, or null as soon
 * as the body passes the limit (a chunked body with no Content-Length): the rest is
 * still read and discarded, so the connection stays usable after the 413. Rejects when
 * the client goes away before the end.
 */
function readUpload (stream) {
  return new Promise((resolve, reject) => {
    let bytes = 0
    let crc = 0
    let settled = false
    const settle = (fn, value) => {
      if (settled) return
      settled = true
      fn(value)
    }
    stream.on('data', (chunk) => {
      if (settled) return // past the limit: drained, not counted
      bytes += chunk.length
      if (bytes > MAX_UPLOAD) return settle(resolve, null)
      crc = zlib.crc32(chunk, crc)
    })
    stream.on('end', () => settle(resolve, uploadBody(bytes, crc)))
    stream.on('error', (err) => settle(reject, err))
    stream.on('close', () => settle(reject, new Error('request body aborted')))
  })
}

/** /delay/'s wait: a timer, the event loop serves other requests meanwhile. */
function delay () {
  return sleep(DELAY_MS)
}

module.exports = {
  MAX_UPLOAD,
  UPLOAD_TOO_LARGE,
  UPLOAD_ABORTED,
  UPLOAD_ALLOW,
  DELAY_MS,
  DELAY_BODY,
  declaredTooLarge,
  uploadBody,
  readUpload,
  delay
}
