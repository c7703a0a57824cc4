'use strict'

// The express application: the contract's routes, JSON 404 / 405 / 400 / 500, and a
// PATCH body read raw whatever its Content-Type. One instance per worker process.
// The contract's rules, the suite's statements and the fortunes template are the
// Node.js servers' shared code (../../_jscommon); the manifest's [notes] say why each
// setting is what it is.

const http = require('node:http')
const https = require('node:https')
const path = require('node:path')
const express = require('express')
const compression = require('compression')
const { WebSocketServer } = require('ws')
const { Eta } = require('eta')
const { LRUCache } = require('lru-cache')
const {
  parseUserId, parsePatchBody, queryParam, parseCount, errorBody, ERRORS, JSON_TYPE, TEXT_TYPE, MAX_BODY
} = require('../../_jscommon/contract')
const suite = require('../../_jscommon/suite')
const workloads = require('../../_jscommon/workloads')
const websocket = require('../../_jscommon/websocket')

const KEEP_ALIVE_MS = 72 * 1000 // idle keep-alive connections kept this long (Node: 5 s)
const USER_PATH = /^\/user\/[^/]*\/$/ // what the router would match as /user/:id/
const USER_ALLOW = 'GET, PATCH, HEAD'

// A Content-Type that is a media type (type/subtype, parameters after ';'), RFC 9110
// tokens; anything else is a 400, as in fastify.
const MEDIA_TYPE = /^[\t ]*[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+[\t ]*(;.*)?$/s

// Why body-parser refused to read a body, as a 400 reason (the contract allows 400 or
// 422 for a bad body; body-parser would say 413 / 415).
const BODY_ERRORS = {
  'entity.too.large': `body too large (max ${MAX_BODY} bytes)`,
  'request.size.invalid': 'Content-Length does not match the body',
  'encoding.unsupported': 'unsupported Content-Encoding',
  'request.aborted': 'request aborted'
}

/** compression's default filter (a compressible Content-Type), but never a 206. */
function wholeAnswer (req, res) {
  return res.statusCode !== 206 && compression.filter(req, res)
}

function sendError (res, status, body) {
  res.status(status).set('Content-Type', JSON_TYPE).send(body)
}

/** Eta as an express view engine: templates compiled once per process (cache: true). */
function etaEngine (views) {
  const eta = new Eta({ views, cache: true }) // autoEscape: true (eta's default)
  return (file, options, callback) => {
    let html
    try {
      // express hands over the absolute path; eta resolves names inside `views`.
      html = eta.render(path.relative(views, file), options)
    } catch (err) {
      return callback(err)
    }
    return callback(null, html)
  }
}

function buildApp (cfg, repo) {
  const app = express()
  app.disable('x-powered-by') // no "X-Powered-By: Express" header
  app.set('etag', false) // no ETag: no hash of every body (see the manifest's notes)
  app.enable('strict routing') // /user/1 is not /user/1/ (404, as in every server)
  app.enable('case sensitive routing')
  app.set('query parser', 'simple') // node:querystring, express 5's default, stated
  app.set('views', suite.TEMPLATES_DIR)
  app.engine('eta', etaEngine(suite.TEMPLATES_DIR))
  app.set('view engine', 'eta')
  app.enable('view cache') // NODE_ENV=production does this too; stated for the tests

  // BENCH_COMPRESSION=1: the compression middleware (expressjs/compression) first, so
  // it sees every response, static files included; its defaults (gzip level 6, br
  // quality 4, nothing under 1 KiB), but a 206 is sent as is: its Content-Range counts
  // the file's bytes, not the compressed ones (the middleware would compress it).
  // Without the variable it is not mounted at all.
  if (cfg.compression) app.use(compression({ filter: wholeAnswer }))
  // BENCH_STATIC_DIR: express's own static handler (serve-static on send), public (no
  // token), with its defaults (weak ETag from size and mtime, Last-Modified, conditional
  // GET, ranges) but redirect off: /static is a JSON 404 like any path without its
  // slash, not an HTML 301. A name that is not there or that climbs out of the folder
  // (send answers 403) falls through to the JSON 404 below. Without the variable there
  // is no /static/ at all.
  if (cfg.staticDir) app.use('/static', express.static(cfg.staticDir, { redirect: false }))

  const token = cfg.token
  const pingBody = JSON.stringify({ server: cfg.serverId, database: cfg.db, orm: cfg.orm })

  // Every PATCH body, whatever its Content-Type (or none, but a malformed one), as a
  // Buffer capped at 64 KiB; contract.parsePatchBody validates it. Read only after
  // the token, database and id checks (userPrecheck).
  const rawBody = express.raw({
    type: (req) => req.headers['content-type'] === undefined || MEDIA_TYPE.test(req.headers['content-type']),
    limit: MAX_BODY
  })

  // ------------------------------------------------------------------ handlers

  function ping (req, res) {
    res.set('Content-Type', JSON_TYPE).send(pingBody)
  }

  /** Token, then the database, then the id: the user routes' order. */
  function userPrecheck (req, res, next) {
    if (req.headers.token !== token) return sendError(res, 401, ERRORS.token)
    if (repo === null) return sendError(res, 404, ERRORS.noDatabase)
    const id = parseUserId(req.params.id)
    if (id === null) return sendError(res, 404, ERRORS.notFound)
    req.userId = id
    next()
  }

  async function getUser (req, res) {
    let found
    try {
      found = await repo.getUser(req.userId)
    } catch (err) {
      return databaseError(res, err)
    }
    if (found === null) return sendError(res, 404, ERRORS.notFound)
    res.json(found)
  }

  async function patchUser (req, res) {
    const fields = parsePatchBody(req.body)
    if (typeof fields === 'string') return sendError(res, 400, errorBody(fields))
    let updated
    try {
      updated = await repo.updateUser(req.userId, fields.username, fields.email)
    } catch (err) {
      return databaseError(res, err)
    }
    if (updated === null) return sendError(res, 404, ERRORS.notFound)
    res.json(updated)
  }

  function plain (req, res) {
    if (req.headers.token !== token) return sendError(res, 401, ERRORS.token)
    const q = req.query // a getter in express 5: parsed on each access, so read once
    const body = `param1=${queryParam(q, 'param1') ?? ''}, param2=${queryParam(q, 'param2') ?? ''}, ` +
      `param3=${queryParam(q, 'param3') ?? ''}`
    res.set('Content-Type', TEXT_TYPE).send(body)
  }

  function toJson (req, res) {
    if (req.headers.token !== token) return sendError(res, 401, ERRORS.token)
    const q = req.query
    res.json({
      param1: queryParam(q, 'param1') ?? null,
      param2: queryParam(q, 'param2') ?? null,
      param3: queryParam(q, 'param3') ?? null
    })
  }

  // ------------------------------------------- the database suite (CONTRACT.md 6)

  // /cached/: this process's own cache (every worker process fills its own), room for
  // all 10,000 rows, no ttl: once warm, no statement at all.
  const cache = new LRUCache(suite.CACHE_OPTIONS)

  /** Token, then the database: the suite routes' order. */
  function suitePrecheck (req, res, next) {
    if (req.headers.token !== token) return sendError(res, 401, ERRORS.token)
    if (repo === null) return sendError(res, 404, ERRORS.noDatabase)
    next()
  }

  // /queries/, /updates/, /cached/: the rows as JSON.
  const suiteRoute = (answer) => async function (req, res) {
    let rows
    try {
      rows = await answer(parseCount(queryParam(req.query, 'n')))
    } catch (err) {
      return databaseError(res, err)
    }
    res.json(rows)
  }

  // One SELECT of the table, one fortune added, code-point order, rendered by eta
  // through express's res.render (<%= %> escapes & < > " ').
  async function fortunes (req, res) {
    let rows
    try {
      rows = await suite.fortunes(repo)
    } catch (err) {
      return databaseError(res, err)
    }
    res.render(suite.FORTUNES_TEMPLATE, { fortunes: rows }) // text/html; charset=utf-8
  }

  function databaseError (res, err) {
    // Errors only, never per request: this is not an access log.
    console.error(`${cfg.name}: database error: ${err && err.message}`)
    return sendError(res, 500, ERRORS.database)
  }

  // ------------------------------------------------------- the HTTP workloads

  // The body streamed through zlib's CRC-32 as it arrives (no body-parser, nothing
  // kept); a Content-Length over 8 MiB is refused before a byte is read.
  async function upload (req, res) {
    if (req.headers.token !== token) return sendError(res, 401, ERRORS.token)
    if (workloads.declaredTooLarge(req.headers)) return sendError(res, 413, workloads.UPLOAD_TOO_LARGE)
    let body
    try {
      body = await workloads.readUpload(req)
    } catch {
      return sendError(res, 400, workloads.UPLOAD_ABORTED) // the client is gone: nobody reads it
    }
    if (body === null) return sendError(res, 413, workloads.UPLOAD_TOO_LARGE)
    res.set('Content-Type', JSON_TYPE).send(body)
  }

  async function delay (req, res) {
    if (req.headers.token !== token) return sendError(res, 401, ERRORS.token)
    await workloads.delay() // a timer: the worker serves other requests meanwhile
    res.set('Content-Type', TEXT_TYPE).send(workloads.DELAY_BODY)
  }

  // GET /ws/ that asks for no upgrade (an upgrade never reaches express: the http
  // server's 'upgrade' event, buildServer below): token first, then a JSON 426.
  function wsWithoutUpgrade (req, res) {
    if (req.headers.token !== token) return sendError(res, 401, ERRORS.token)
    res.set('Upgrade', 'websocket')
    sendError(res, 426, websocket.UPGRADE_REQUIRED)
  }

  // -------------------------------------------------------------------- routes

  /** `handlers` (method -> middleware) on `url`, and a JSON 405 with Allow for the rest. */
  function addRoute (url, handlers) {
    const route = app.route(url)
    for (const [method, ...fns] of handlers) route[method.toLowerCase()](...fns)
    // express answers HEAD for every GET route itself.
    const methods = handlers.map(([method]) => method)
    const allow = [...methods, ...(methods.includes('GET') ? ['HEAD'] : [])].join(', ')
    route.all((req, res) => {
      res.set('Allow', allow)
      sendError(res, 405, ERRORS.method)
    })
  }

  addRoute('/ping/', [['GET', ping]])
  addRoute('/user/:id/', [['GET', userPrecheck, getUser], ['PATCH', userPrecheck, rawBody, patchUser]])
  addRoute('/plain/', [['GET', plain]])
  addRoute('/to_json/', [['GET', toJson]])
  addRoute('/queries/', [['GET', suitePrecheck, suiteRoute((n) => suite.queries(repo, n))]])
  addRoute('/updates/', [['GET', suitePrecheck, suiteRoute((n) => suite.updates(repo, n))]])
  addRoute('/cached/', [['GET', suitePrecheck, suiteRoute((n) => suite.cached(cache, repo, n))]])
  addRoute('/fortunes/', [['GET', suitePrecheck, fortunes]])
  addRoute('/upload/', [['POST', upload]])
  addRoute('/delay/', [['GET', delay]])
  addRoute(websocket.WS_PATH, [['GET', wsWithoutUpgrade]])

  // Unknown paths: a JSON 404 (express's default is an HTML page).
  app.use((req, res) => sendError(res, 404, ERRORS.notFound))

  // Errors raised before or outside a handler, as JSON (express's default handler
  // answers HTML). A body body-parser could not read (too large, truncated, an
  // unknown Content-Encoding) is a 400 after the checks that came first. A path id
  // with a bad percent-escape fails in the router before any route: token first,
  // then 405 / 404 as for any other id. Anything else is a logged 500.
  app.use((err, req, res, next) => { // eslint-disable-line no-unused-vars
    if (res.headersSent) return req.socket.destroy()
    const status = err && (err.status || err.statusCode)
    if (!(Number.isInteger(status) && status >= 400 && status < 500)) {
      console.error(`${cfg.name}: internal error: ${err && err.stack}`)
      return sendError(res, 500, ERRORS.internal)
    }
    if (req.route === undefined) { // the router's own error: a path it could not decode
      if (req.headers.token !== token) return sendError(res, 401, ERRORS.token)
      if (USER_PATH.test(req.path) && !USER_ALLOW.split(', ').includes(req.method)) {
        res.set('Allow', USER_ALLOW)
        return sendError(res, 405, ERRORS.method)
      }
      return sendError(res, 404, ERRORS.notFound)
    }
    return sendError(res, 400, errorBody(BODY_ERRORS[err.type] || 'could not read the request body'))
  })

  return app
}

/**
 * The WebSocket echo on /ws/, as ws's README attaches it to an express app's server: a
 * WebSocketServer without a server of its own (noServer), the http server's 'upgrade'
 * event checking the request (path, then the token) before ws makes the handshake.
 * Returns the 'upgrade' listener and the WebSocketServer.
 */
function websocketEcho (cfg, app) {
  const wss = new WebSocketServer({ noServer: true, ...websocket.WS_OPTIONS })
  wss.on('connection', (ws) => {
    ws.on('error', () => {}) // ws closes the connection itself (1002, 1007, 1009, ...)
    ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }))
  })
  // An error on the socket before the handshake (the client went away): just end it.
  function onSocketError () { this.destroy() }
  function onUpgrade (req, socket, head) {
    socket.on('error', onSocketError)
    // Node hands every request with an Upgrade header to this event once it has a
    // listener, an upgrade to another protocol too (curl --http2 asks for h2c on
    // http://). That Upgrade is ignored, as RFC 9110 lets a server do: a request
    // without a body is answered by express as before (then the connection closes:
    // Node no longer parses it); one with a body, which Node no longer reads, is a 400.
    if (String(req.headers.upgrade).toLowerCase() !== 'websocket') {
      if (req.headers['content-length'] > 0 || req.headers['transfer-encoding'] !== undefined) {
        return websocket.refuseUpgrade(socket, 400, websocket.UPGRADE_UNSUPPORTED)
      }
      return websocket.answerIgnoringUpgrade(app, req, socket)
    }
    // The contract's answers as JSON, without a handshake: another path is a 404 (an
    // upgrade never reaches express's router), no token a 401.
    if (websocket.pathOf(req.url) !== websocket.WS_PATH) return websocket.refuseUpgrade(socket, 404, ERRORS.notFound)
    if (req.headers.token !== cfg.token) return websocket.refuseUpgrade(socket, 401, ERRORS.token)
    socket.removeListener('error', onSocketError)
    // ws checks the handshake itself (GET, Upgrade, Sec-WebSocket-Key and -Version;
    // a 400 otherwise) and answers 101 with Sec-WebSocket-Accept.
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit('connection', ws, req))
  }
  return { wss, onUpgrade }
}

/**
 * The HTTP server of one worker: express on node:http, keep-alive connections kept
 * 72 s; with `tls` ({ port, options }, ./listeners.js) also the same app on
 * node:https there, with the same keep-alive setting. Both serve the WebSocket echo
 * (websocketEcho) on their 'upgrade' event. listen() (the TLS listener first, so it is
 * open by the time /ping/ answers) and close() (both) as ../../_jscommon/cluster.js
 * expects them.
 */
function buildServer (cfg, repo, { tls = null } = {}) {
  const app = buildApp(cfg, repo)
  const server = http.createServer(app)
  const tlsServer = tls === null ? null : https.createServer(tls.options, app)
  // [server, port], the TLS listener first
  const listeners = [...(tls === null ? [] : [[tlsServer, tls.port]]), [server, cfg.port]]
  const servers = listeners.map(([s]) => s)
  const ws = websocketEcho(cfg, app)
  for (const s of servers) {
    s.keepAliveTimeout = KEEP_ALIVE_MS
    s.on('upgrade', ws.onUpgrade)
  }
  return {
    server,
    tlsServer,
    wss: ws.wss,
    listen: async () => {
      for (const [s, port] of listeners) {
        await new Promise((resolve, reject) => {
          s.once('error', reject)
          s.listen(port, cfg.host, () => {
            s.off('error', reject)
            resolve()
          })
        })
      }
    },
    // Stop accepting, close idle keep-alive connections now (busy ones close after
    // their response) and every WebSocket with 1001 (going away); resolves when every
    // connection of every listener is gone.
    close: () => {
      for (const client of ws.wss.clients) client.close(1001)
      return Promise.all(servers.map((s) => new Promise((resolve) => {
        s.close(() => resolve())
        s.closeIdleConnections()
      })))
    }
  }
}

module.exports = { buildApp, buildServer, MAX_BODY }
