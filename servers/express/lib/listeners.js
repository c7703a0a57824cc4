'use strict'

// The TLS listener express opens besides HTTP/1.1 on BENCH_PORT when the harness asks
// for it (servers/README.md, "Protocols a server speaks itself"; read and checked by
// ../../_jscommon/listeners.js): BENCH_TLS_PORT, HTTP/1.1 over TLS 1.3 (ALPN http/1.1
// only), served by Node.js's own https module with the same express app. express speaks
// no HTTP/2 (its req/res do not work on Node's http2 compatibility API), so
// BENCH_H2C_PORT is refused rather than ignored. Without these variables there is no
// other listener and the server is exactly the HTTP/1.1 one.

const common = require('../../_jscommon/listeners')

/**
 * The TLS listener the environment asks for, as { port, options } (options for
 * https.createServer), or null: none; ListenerConfigError (with the reason) before
 * anything listens.
 */
function tlsListenerFromEnv (env = process.env) {
  if (common.port(env, 'BENCH_H2C_PORT') !== 0) {
    throw new common.ListenerConfigError('BENCH_H2C_PORT: express does not speak h2c (HTTP/2)')
  }
  // http/1.1 only: a client offering only other protocols gets no_application_protocol
  // (Node's own ALPN callback); one offering no ALPN is served HTTP/1.1.
  return common.tlsListener(env, { ALPNProtocols: ['http/1.1'] })
}

module.exports = {
  tlsListenerFromEnv,
  ListenerConfigError: common.ListenerConfigError,
  TLS_MIN_VERSION: common.TLS_MIN_VERSION,
  TLS_CIPHER_SUITE: common.TLS_CIPHER_SUITE
}
