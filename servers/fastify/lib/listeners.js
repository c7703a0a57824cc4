'use strict'

// The listeners fastify opens besides HTTP/1.1 on BENCH_PORT when the harness asks for
// them (servers/README.md, "Protocols a server speaks itself"; read and checked by
// ../../_jscommon/listeners.js): TLS on BENCH_TLS_PORT (ALPN h2 and http/1.1) and HTTP/2
// with prior knowledge on BENCH_H2C_PORT. Each is a fastify app of its own, built by the
// same buildApp, with fastify's http2 / https server options: Node.js's own http2 and
// tls modules, no proxy. Without these variables there is none and the server is
// exactly the HTTP/1.1 one.

const common = require('../../_jscommon/listeners')

/**
 * What the environment asks for, as [{ protocol, port, serverOptions }] (empty: none);
 * ListenerConfigError (with the reason) before anything listens.
 */
function listenersFromEnv (env = process.env) {
  const listeners = []
  // ALPN: http2.createSecureServer offers h2, and http/1.1 with allowHTTP1
  const secure = common.tlsListener(env, { allowHTTP1: true })
  if (secure !== null) {
    listeners.push({ protocol: 'tls', port: secure.port, serverOptions: { ...http2Options(), https: secure.options } })
  }
  const h2cPort = common.port(env, 'BENCH_H2C_PORT')
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

module.exports = {
  listenersFromEnv,
  ListenerConfigError: common.ListenerConfigError,
  TLS_MIN_VERSION: common.TLS_MIN_VERSION,
  TLS_CIPHER_SUITE: common.TLS_CIPHER_SUITE
}
