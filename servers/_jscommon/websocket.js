'use strict'

// The WebSocket endpoint's parts that depend on no framework (servers/README.md,
// "WebSocket"), shared by the Node.js servers. Both serve /ws/ with the ws library
// (fastify through @fastify/websocket, express with ws on the http server's 'upgrade'
// event); each server's lib/app.js has its own echo handler, as its users write it.
// Here: ws's options, the JSON answers of an upgrade that is not made (express's
// 'upgrade' listener writes them on the socket itself). No dependency here: ws itself
// is each server's own, pinned by its lock file.
//
// ws does every RFC 6455 check the contract asks for itself (nothing added): text
// messages' UTF-8 (1007), client frames' mask (1002), fragments reassembled (their
// total counted against maxPayload, 1009 beyond it), control frames' length, pings
// answered by a pong with the same payload and unsolicited pongs ignored, a close frame
// answered with one (the client's code echoed) and then the TCP connection ended.

const { STATUS_CODES, ServerResponse } = require('node:http')
const { errorBody, JSON_TYPE } = require('./contract')

const WS_PATH = '/ws/'

// ws's WebSocketServer options, the same for both servers.
const WS_OPTIONS = Object.freeze({
  // No permessage-deflate: ws's server default is already off, stated here; the harness
  // never offers it anyway, and the contract has no compression on /ws/.
  perMessageDeflate: false,
  // A message (all its fragments together) up to 100 MiB: ws's own default, stated;
  // the contract asks for 64 KiB at least. A larger one is closed with 1009.
  maxPayload: 100 * 1024 * 1024
})

const UPGRADE_REQUIRED = errorBody('websocket upgrade required')
const UPGRADE_UNSUPPORTED = errorBody('upgrade to that protocol not supported')

/**
 * A plain HTTP answer on a socket whose request asked for an upgrade that is not
 * made (no token, another path): `status` with the JSON `body`, then the connection
 * closed. As ws's README does it for a refused client, with a JSON body.
 */
function refuseUpgrade (socket, status, body) {
  socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: ${JSON_TYPE}\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
  socket.destroySoon() // once written

}

/**
 * `req`, which asked for an upgrade to another protocol than websocket, answered by the
 * request listener `handler` (an express app) as if it had not: on a ServerResponse of
 * its own on the socket (Node's http server no longer parses it), Connection: close.
 * As @fastify/websocket does for fastify, which routes every upgrade request.
 */
function answerIgnoringUpgrade (handler, req, socket) {
  const res = new ServerResponse(req)
  res.shouldKeepAlive = false
  res.assignSocket(socket)
  res.on('finish', () => socket.destroySoon())
  handler(req, res)
}

/** The path of a request target, without its query string. */
function pathOf (url) {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

module.exports = {
  WS_PATH, WS_OPTIONS, UPGRADE_REQUIRED, UPGRADE_UNSUPPORTED, refuseUpgrade, answerIgnoringUpgrade, pathOf
}
