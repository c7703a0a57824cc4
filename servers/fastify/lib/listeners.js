'use strict'

// The listeners the server opens besides HTTP/1.1 on BENCH_PORT when the harness asks
// for them (servers/README.md, "Protocols a server speaks itself"): TLS on
// BENCH_TLS_PORT (ALPN h2 and http/1.1) and HTTP/2 with prior knowledge on
// BENCH_H2C_PORT. Each is a fastify app of its own, built by the same buildApp, with
// fastify's http2 / https server options: Node.js's own http2 and tls modules, no proxy.
// Without these variables there is none and the server is exactly the HTTP/1.1 one.

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
 * What the environment asks for, as [{ protocol, port, serverOptions }] (empty: none).
 * The certificate and key are read, and a TLS context made from them once, here: a
 * bad file or a key that does not match ends the start-up with the reason
 * (ListenerConfigError), before anything listens.
 */
function listenersFromEnv (env = process.env) {
  const listeners = []
  const tlsPort = port(env, 'BENCH_TLS_PORT')
  if (tlsPort !== 0) {
    if (!env.BENCH_TLS_CERT || !env.BENCH_TLS_KEY) {
      throw new ListenerConfigError('BENCH_TLS_PORT needs BENCH_TLS_CERT and BENCH_TLS_KEY')
    }
    const https = {
      cert: readPem(env, 'BENCH_TLS_CERT'),
      key: readPem(env, 'BENCH_TLS_KEY'),
      // TLS 1.3 only, and of its suites TLS_AES_128_GCM_SHA256 alone (Node.js passes
      // the TLS_* names of `ciphers` to OpenSSL's TLS 1.3 suite list; no TLS 1.2 list
      // is left, which minVersion makes moot). Session tickets stay on (Node's default).
      minVersion: TLS_MIN_VERSION,
      ciphers: TLS_CIPHER_SUITE,
      // ALPN: http2.createSecureServer offers h2, and http/1.1 with allowHTTP1
      allowHTTP1: true
    }
    try {
      tls.createSecureContext(https)
    } catch (err) {
      throw new ListenerConfigError(`BENCH_TLS_CERT / BENCH_TLS_KEY: ${err.message}`)
    }
    listeners.push({ protocol: 'tls', port: tlsPort, serverOptions: { ...http2Options(), https } })
  }
  const h2cPort = port(env, 'BENCH_H2C_PORT')
  if (h2cPort !== 0) {
    // http2.createServer: HTTP/2 with prior knowledge only (no HTTP/1.1 Upgrade)
    listeners.push({ protocol: 'h2c', port: h2cPort, serverOptions: http2Options() })
  }
  return listeners
}

function http2Options () {
  return {
    // Node.js's http2 with its default settings (no maxConcurrentStreams limit sent,
    // 64 KiB windows, 10 MB maxSessionMemory); fastify's http2SessionTimeout default
    // (72 s, like keepAliveTimeout) closes an idle session.
    http2: true,
    // On close, fastify sends GOAWAY to every open HTTP/2 session (on Node.js < 24
    // server.close() alone would wait for each client to leave), and ends the TLS
    // listener's HTTP/1.1 keep-alive sockets.
    forceCloseConnections: true
  }
}

module.exports = { listenersFromEnv, ListenerConfigError, TLS_MIN_VERSION, TLS_CIPHER_SUITE }
