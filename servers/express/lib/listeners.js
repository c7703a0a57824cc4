'use strict'

// The TLS listener express opens besides HTTP/1.1 on BENCH_PORT when the harness asks
// for it (servers/README.md, "Protocols a server speaks itself"): BENCH_TLS_PORT with
// BENCH_TLS_CERT and BENCH_TLS_KEY, HTTP/1.1 over TLS 1.3 (ALPN http/1.1 only), served
// by Node.js's own https module with the same express app. express speaks no HTTP/2
// (its req/res do not work on Node's http2 compatibility API), so BENCH_H2C_PORT is
// refused rather than ignored. Without these variables there is no other listener and
// the server is exactly the HTTP/1.1 one. fastify's lib/listeners.js, minus HTTP/2.

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
 * The TLS listener the environment asks for, as { port, options } (options for
 * https.createServer), or null: none. The certificate and key are read, and a TLS
 * context made from them once, here: a bad file or a key that does not match ends the
 * start-up with the reason (ListenerConfigError), before anything listens.
 */
function tlsListenerFromEnv (env = process.env) {
  if (port(env, 'BENCH_H2C_PORT') !== 0) {
    throw new ListenerConfigError('BENCH_H2C_PORT: express does not speak h2c (HTTP/2)')
  }
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
    // http/1.1 only: a client offering only other protocols gets no_application_protocol
    // (Node's own ALPN callback); one offering no ALPN is served HTTP/1.1.
    ALPNProtocols: ['http/1.1']
  }
  try {
    tls.createSecureContext(options)
  } catch (err) {
    throw new ListenerConfigError(`BENCH_TLS_CERT / BENCH_TLS_KEY: ${err.message}`)
  }
  return { port: tlsPort, options }
}

module.exports = { tlsListenerFromEnv, ListenerConfigError, TLS_MIN_VERSION, TLS_CIPHER_SUITE }
