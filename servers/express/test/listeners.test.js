'use strict'

// The TLS listener's configuration (../lib/listeners.js), without a certificate of
// its own: what the environment asks for, and the reasons start-up ends with. The
// handshake itself (TLS 1.3, the one suite, ALPN) is checked against the running
// server by the harness (tests/integration/test_contract.py, own protocols).

const test = require('node:test')
const assert = require('node:assert/strict')
const { tlsListenerFromEnv, ListenerConfigError } = require('../lib/listeners')

test('no BENCH_TLS_PORT (unset, empty or 0): no TLS listener', () => {
  assert.equal(tlsListenerFromEnv({}), null)
  assert.equal(tlsListenerFromEnv({ BENCH_TLS_PORT: '' }), null)
  assert.equal(tlsListenerFromEnv({ BENCH_TLS_PORT: '0' }), null)
})

test('a bad port, a missing or unreadable certificate, or h2c: a configuration error', () => {
  const refused = (env, reason) => assert.throws(() => tlsListenerFromEnv(env),
    (err) => err instanceof ListenerConfigError && reason.test(err.message))
  refused({ BENCH_TLS_PORT: '65536' }, /BENCH_TLS_PORT must be a port/)
  refused({ BENCH_TLS_PORT: '8443' }, /needs BENCH_TLS_CERT and BENCH_TLS_KEY/)
  refused({ BENCH_TLS_PORT: '8443', BENCH_TLS_CERT: '/nonexistent/cert.pem', BENCH_TLS_KEY: '/nonexistent/key.pem' },
    /BENCH_TLS_CERT: cannot read "\/nonexistent\/cert.pem"/)
  refused({ BENCH_TLS_PORT: '8443', BENCH_TLS_CERT: __filename, BENCH_TLS_KEY: __filename },
    /BENCH_TLS_CERT \/ BENCH_TLS_KEY: /)
  refused({ BENCH_H2C_PORT: '8444' }, /express does not speak h2c/)
})
