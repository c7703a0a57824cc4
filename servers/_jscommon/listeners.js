'use strict'

// What the harness asks of a Node.js server besides HTTP/1.1 on BENCH_PORT
// (servers/README.md, "Protocols a server speaks itself"), read and checked once at
// start-up: a TLS listener on BENCH_TLS_PORT with BENCH_TLS_CERT / BENCH_TLS_KEY, and an
// h2c one on BENCH_H2C_PORT. Each framework adds its own server options (fastify's
// http2/https, express's https) in its lib/listeners.js.

const fs = require('node:fs')
const tls = require('node:tls')

// The one TLS version and cipher suite the harness accepts on the wire.
const TLS_MIN_VERSION = 'TLSv1.3'
const TLS_CIPHER_SUITE = 'TLS_AES_128_GCM_SHA256'

class ListenerConfigError extends Error {}

/** The port `name` asks for; 0 (unset, empty or 0): no such listener. */
function port (env, name) {
  const raw = env[name]
  if (raw === undefined || raw === '') return 0
  if (!/^[0-9]{1,5}$/.test(raw) || Number(raw) > 65535) {
    throw new ListenerConfigError(`${name} must be a port (0: none), got ${JSON.stringify(raw)}`)
  }
  return Number(raw)
}

function readPem (env, name) {
  try {
    return fs.readFileSync(env[name])
  } catch (err) {
    throw new ListenerConfigError(`${name}: cannot read ${JSON.stringify(env[name])}: ${err.message}`)
  }
}

/**
 * The TLS listener the environment asks for, as { port, options } (`options`: the
 * certificate, key, TLS 1.3 and the one suite, plus the framework's `extra`), or null:
 * none. A TLS context is made from them once, here: a bad file or a key that does not
 * match ends the start-up with the reason (ListenerConfigError), before anything listens.
 */
function tlsListener (env, extra = {}) {
  const tlsPort = port(env, 'BENCH_TLS_PORT')
  if (tlsPort === 0) return null
  if (!env.BENCH_TLS_CERT || !env.BENCH_TLS_KEY) {
    throw new ListenerConfigError('BENCH_TLS_PORT needs BENCH_TLS_CERT and BENCH_TLS_KEY')
  }
  const options = {
    cert: readPem(env, 'BENCH_TLS_CERT'),
    key: readPem(env, 'BENCH_TLS_KEY'),
    // TLS 1.3 only, and of its suites TLS_AES_128_GCM_SHA256 alone (Node.js passes the
    // TLS_* names of `ciphers` to OpenSSL's TLS 1.3 suite list). Session tickets stay
    // on (Node's default).
    minVersion: TLS_MIN_VERSION,
    ciphers: TLS_CIPHER_SUITE,
    ...extra
  }
  try {
    tls.createSecureContext(options)
  } catch (err) {
    throw new ListenerConfigError(`BENCH_TLS_CERT / BENCH_TLS_KEY: ${err.message}`)
  }
  return { port: tlsPort, options }
}

module.exports = { tlsListener, port, ListenerConfigError, TLS_MIN_VERSION, TLS_CIPHER_SUITE }
