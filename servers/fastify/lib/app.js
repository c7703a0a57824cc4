'use strict'

// The fastify application: the contract's routes, JSON 404 / 405, and a PATCH body
// read raw whatever its Content-Type. One instance per worker process. The contract's
// rules, the suite's statements and the fortunes template are the Node.js servers'
// shared code (../../_jscommon).

const { STATUS_CODES } = require('node:http')
const Fastify = require('fastify')
const fastifyView = require('@fastify/view')
const fastifyCompress = require('@fastify/compress')
const fastifyStatic = require('@fastify/static')
const fastifyWebsocket = require('@fastify/websocket')
const { Eta } = require('eta')
const { LRUCache } = require('lru-cache')
const {
  parseUserId, parsePatchBody, queryParam, parseCount, errorBody, ERRORS, JSON_TYPE, TEXT_TYPE, MAX_BODY
} = require('../../_jscommon/contract')
const suite = require('../../_jscommon/suite')
const workloads = require('../../_jscommon/workloads')
const websocket = require('../../_jscommon/websocket')
const { USER_SCHEMA, USERS_SCHEMA, PARAMS_SCHEMA } = require('./schemas')

const USER_METHODS = ['GET', 'PATCH', 'HEAD'] // what /user/{id}/ serves (HEAD: fastify's, for GET)

const ERR_TOKEN = ERRORS.token
const ERR_NOT_FOUND = ERRORS.notFound
const ERR_NO_DB = ERRORS.noDatabase
const ERR_METHOD = ERRORS.method
const ERR_DATABASE = ERRORS.database
const ERR_INTERNAL = ERRORS.internal

// Why fastify refused to read a body, as a 400 reason (the contract allows 400 or 422
// for a bad body; fastify would say 413 / 415).
const BODY_ERRORS = {
  FST_ERR_CTP_BODY_TOO_LARGE: `body too large (max ${MAX_BODY} bytes)`,
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'malformed Content-Type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'Content-Length does not match the body'
}

function sendError (reply, status, body) {
  return reply.code(status).type(JSON_TYPE).send(body)
}

/** This process's /cached/ cache: room for all 10,000 rows, no ttl. */
function newCache () {
  return new LRUCache(suite.CACHE_OPTIONS)
}

/**
 * The app over `repo`. `serverOptions`: fastify's server options for another listener
 * than HTTP/1.1 (http2, https: ./listeners.js); `cache`: the process's /cached/ cache,
 * shared by the apps of one process (a new one when not given).
 */
function buildApp (cfg, repo, { serverOptions = {}, cache = newCache() } = {}) {
  const app = Fastify({
    ...serverOptions,
    logger: false, // no logger at all, so no per-request access log
    // The router's own errors: a path parameter with a bad percent-escape
    // (FST_ERR_BAD_URL, fastify says 400) or over maxParamLength (fastify says 414).
    // /user/{id}/ is the only route with a parameter, so this is an id that is not
    // one: the contract's order (token first, then 404; a wrong method is 405).
    frameworkErrors (err, request, reply) {
      if (err.code === 'FST_ERR_BAD_URL' || err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
        if (request.headers.token !== cfg.token) return sendError(reply, 401, ERR_TOKEN)
        if (!USER_METHODS.includes(request.method)) {
          reply.header('allow', USER_METHODS.join(', '))
          return sendError(reply, 405, ERR_METHOD)
        }
        return sendError(reply, 404, ERR_NOT_FOUND)
      }
      const status = err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400
      return sendError(reply, status, errorBody(err.message || 'bad request'))
    }
  })

  const token = cfg.token
  const pingBody = JSON.stringify({ server: cfg.serverId, database: cfg.db, orm: cfg.orm })

  // Every body, whatever its Content-Type (or none), arrives as a Buffer and is
  // validated by contract.parsePatchBody. fastify's own parsers would answer 415 for
  // any other Content-Type, 400 in their own format before the token check, and reject
  // a "__proto__" key that the contract says to ignore. bodyLimit caps what is buffered.
  app.removeAllContentTypeParsers()
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: MAX_BODY }, (request, body, done) => {
    done(null, body)
  })

  // ------------------------------------------------------------------ handlers

  function ping (request, reply) {
    reply.type(JSON_TYPE).send(pingBody)
  }

  async function getUser (request, reply) {
    if (request.headers.token !== token) return sendError(reply, 401, ERR_TOKEN)
    if (repo === null) return sendError(reply, 404, ERR_NO_DB)
    const id = parseUserId(request.params.id)
    if (id === null) return sendError(reply, 404, ERR_NOT_FOUND)
    let found
    try {
      found = await repo.getUser(id)
    } catch (err) {
      return databaseError(reply, err)
    }
    if (found === null) return sendError(reply, 404, ERR_NOT_FOUND)
    return found // serialised by the route's compiled 200 schema
  }

  async function patchUser (request, reply) {
    if (request.headers.token !== token) return sendError(reply, 401, ERR_TOKEN)
    if (repo === null) return sendError(reply, 404, ERR_NO_DB)
    const id = parseUserId(request.params.id)
    if (id === null) return sendError(reply, 404, ERR_NOT_FOUND)
    const fields = parsePatchBody(request.body)
    if (typeof fields === 'string') return sendError(reply, 400, errorBody(fields))
    let updated
    try {
      updated = await repo.updateUser(id, fields.username, fields.email)
    } catch (err) {
      return databaseError(reply, err)
    }
    if (updated === null) return sendError(reply, 404, ERR_NOT_FOUND)
    return updated
  }

  function plain (request, reply) {
    if (request.headers.token !== token) return sendError(reply, 401, ERR_TOKEN)
    const q = request.query
    const body = `param1=${queryParam(q, 'param1') ?? ''}, param2=${queryParam(q, 'param2') ?? ''}, ` +
      `param3=${queryParam(q, 'param3') ?? ''}`
    return reply.type(TEXT_TYPE).send(body)
  }

  function toJson (request, reply) {
    if (request.headers.token !== token) return sendError(reply, 401, ERR_TOKEN)
    const q = request.query
    return reply.send({
      param1: queryParam(q, 'param1') ?? null,
      param2: queryParam(q, 'param2') ?? null,
      param3: queryParam(q, 'param3') ?? null
    })
  }

  // ------------------------------------------- the database suite (CONTRACT.md 6)

  // /cached/: this process's own cache (every worker process fills its own, and the
  // apps of its other listeners share it), room for all 10,000 rows, no ttl: once warm,
  // no statement at all.

  /** Token, then the database: the error reply for a suite request, or null. */
  function suiteRefusal (request, reply) {
    if (request.headers.token !== token) return sendError(reply, 401, ERR_TOKEN)
    if (repo === null) return sendError(reply, 404, ERR_NO_DB)
    return null
  }

  // /queries/, /updates/, /cached/: the rows, serialised by the route's 200 schema.
  const suiteRoute = (answer) => async function (request, reply) {
    const refused = suiteRefusal(request, reply)
    if (refused !== null) return refused
    try {
      return await answer(parseCount(queryParam(request.query, 'n')))
    } catch (err) {
      return databaseError(reply, err)
    }
  }
  const queries = suiteRoute((n) => suite.queries(repo, n))
  const updates = suiteRoute((n) => suite.updates(repo, n))
  const cached = suiteRoute((n) => suite.cached(cache, repo, n))

  // One SELECT of the table, one fortune added, code-point order, rendered by eta
  // through @fastify/view (<%= %> escapes & < > " ').
  async function fortunes (request, reply) {
    const refused = suiteRefusal(request, reply)
    if (refused !== null) return refused
    let rows
    try {
      rows = await suite.fortunes(repo)
    } catch (err) {
      return databaseError(reply, err)
    }
    return reply.view(suite.FORTUNES_TEMPLATE, { fortunes: rows })
  }

  function databaseError (reply, err) {
    // Errors only, never per request: this is not an access log.
    console.error(`fastify: database error: ${err && err.message}`)
    return sendError(reply, 500, ERR_DATABASE)
  }

  /**
   * `handlers` ([method, handler, schema, other route options]) on `url`, and a JSON
   * 405 (with Allow) for every other method.
   */
  function addRoutes (instance, url, handlers) {
    const served = handlers.map(([method]) => method)
    for (const [method, handler, schema, options = {}] of handlers) {
      instance.route({ ...options, method, url, handler, schema, config: { kind: 'route' } })
    }
    // fastify answers HEAD for every GET route itself (exposeHeadRoutes).
    const implicit = served.includes('GET') ? ['HEAD'] : []
    const allow = [...served, ...implicit].join(', ')
    const others = instance.supportedMethods.filter((m) => !served.includes(m) && !implicit.includes(m))
    instance.route({ method: others, url, handler: methodNotAllowed, config: { kind: 'method', allow } })
  }

  function methodNotAllowed (request, reply) {
    reply.header('allow', request.routeOptions.config.allow)
    return sendError(reply, 405, ERR_METHOD)
  }

  // ------------------------------------------------------- the HTTP workloads

  // The body streamed from the request (request.raw) through zlib's CRC-32 as it
  // arrives, nothing kept: the route's content-type parser reads nothing (below). A
  // Content-Length over 8 MiB is refused before a byte is read.
  async function upload (request, reply) {
    if (request.headers.token !== token) return sendError(reply, 401, ERR_TOKEN)
    if (workloads.declaredTooLarge(request.headers)) return sendError(reply, 413, workloads.UPLOAD_TOO_LARGE)
    let body
    try {
      body = await workloads.readUpload(request.raw)
    } catch {
      return sendError(reply, 400, workloads.UPLOAD_ABORTED) // the client is gone: nobody reads it
    }
    if (body === null) return sendError(reply, 413, workloads.UPLOAD_TOO_LARGE)
    return reply.type(JSON_TYPE).send(body)
  }

  async function delay (request, reply) {
    if (request.headers.token !== token) return sendError(reply, 401, ERR_TOKEN)
    await workloads.delay() // a timer: the worker serves other requests meanwhile
    return reply.type(TEXT_TYPE).send(workloads.DELAY_BODY)
  }

  // ------------------------------------------------------------ the WebSocket echo

  // The token, checked before the upgrade: a hook that replies stops it
  // (@fastify/websocket runs the route's hooks on the 'upgrade' request, the handshake
  // only in the route's handler), so no token is a JSON 401 and no handshake.
  function wsToken (request, reply, done) {
    if (request.headers.token !== token) return sendError(reply, 401, ERR_TOKEN)
    done()
  }

  // Each message echoed as it came: text as text, binary as binary (ws hands over the
  // whole message, its fragments reassembled, as a Buffer).
  function echo (socket) {
    socket.on('message', (data, isBinary) => socket.send(data, { binary: isBinary }))
  }

  // GET /ws/ that asks for no upgrade: after the token, a JSON 426, naming websocket in
  // Upgrade over HTTP/1.1 only (HTTP/2 forbids the header: Node would throw).
  function wsWithoutUpgrade (request, reply) {
    if (request.raw.httpVersionMajor === 1) reply.header('upgrade', 'websocket')
    return sendError(reply, 426, websocket.UPGRADE_REQUIRED)
  }

  // BENCH_COMPRESSION=1: @fastify/compress on every route (global), its defaults (br
  // quality 4, gzip level 6, nothing under 1 KiB); its request decompression is off,
  // so request bodies are read exactly as without the variable. Without it the plugin
  // is not registered at all.
  if (cfg.compression) app.register(fastifyCompress, { globalDecompression: false })
  // BENCH_STATIC_DIR: @fastify/static (fastify's static plugin, on @fastify/send), public
  // (no token), its defaults: weak ETag (size, mtime), Last-Modified, conditional GET,
  // ranges; a missing name is the JSON 404, a path that climbs out of the folder
  // @fastify/send's 403 (the error handler below). Without the variable there is no
  // /static/ at all.
  if (cfg.staticDir) app.register(fastifyStatic, { root: cfg.staticDir, prefix: '/static/' })

  // -------------------------------------------------------------------- routes

  const userSchema = { response: { 200: USER_SCHEMA } }
  const usersSchema = { response: { 200: USERS_SCHEMA } }
  const routes = [
    ['/ping/', [['GET', ping]]],
    ['/user/:id/', [['GET', getUser, userSchema], ['PATCH', patchUser, userSchema]]],
    ['/plain/', [['GET', plain]]],
    ['/to_json/', [['GET', toJson, { response: { 200: PARAMS_SCHEMA } }]]],
    ['/queries/', [['GET', queries, usersSchema]]],
    ['/updates/', [['GET', updates, usersSchema]]],
    ['/cached/', [['GET', cached, usersSchema]]],
    ['/delay/', [['GET', delay]]]
  ]
  // Declared once the plugins above are loaded (app.after): @fastify/compress adds its
  // hook to each route as the route is declared (onRoute).
  app.after(() => {
    for (const [url, handlers] of routes) addRoutes(app, url, handlers)
  })

  // /upload/ in its own context, whose one content-type parser (any type, or none)
  // reads nothing: the handler streams the body itself, so the 64 KiB bodyLimit of the
  // other routes' parser does not apply here and nothing is buffered.
  app.register(async function uploadPlugin (instance) {
    instance.removeAllContentTypeParsers()
    instance.addContentTypeParser('*', (request, payload, done) => done(null))
    addRoutes(instance, '/upload/', [['POST', upload]])
  })

  // /fortunes/ in its own encapsulated context with @fastify/view, so the view plugin's
  // per-request onRequest hook (reply.locals) runs for this route only.
  app.register(async function fortunesPlugin (instance) {
    await instance.register(fastifyView, {
      engine: { eta: new Eta() }, // eta's default autoEscape: true
      templates: suite.TEMPLATES_DIR,
      // Templates read and compiled once, then cached. @fastify/view derives this from
      // NODE_ENV=production, which the harness does not set: stated here instead.
      production: true
    })
    addRoutes(instance, '/fortunes/', [['GET', fortunes]])
  })

  // /ws/ in its own encapsulated context with @fastify/websocket (ws, no
  // permessage-deflate, ws's 100 MiB maxPayload, both stated in
  // ../../_jscommon/websocket.js), so the plugin's onRequest / onResponse hooks and
  // its wrapper of every route's handler are on this route only, not on every request
  // of the other routes. Its 'upgrade' listener is on the server, so the TLS listener's
  // HTTP/1.1 (http2's allowHTTP1) upgrades too.
  app.register(async function websocketPlugin (instance) {
    await instance.register(fastifyWebsocket, { options: websocket.WS_OPTIONS })
    addRoutes(instance, websocket.WS_PATH, [['GET', wsWithoutUpgrade, undefined, { preValidation: wsToken, wsHandler: echo }]])
  })

  app.setNotFoundHandler((request, reply) => sendError(reply, 404, ERR_NOT_FOUND))

  // Errors fastify raises before a handler runs. On PATCH /user/{id}/ that is the body
  // (too large, unreadable, a malformed Content-Type): the contract's order still holds
  // (token, database, id, then 400). A wrong method stays 405, an unknown route 404,
  // /static/'s refusals keep their 4xx.
  app.setErrorHandler((err, request, reply) => {
    const status = err.statusCode
    const clientError = Number.isInteger(status) && status >= 400 && status < 500
    if (!clientError) {
      console.error(`fastify: internal error: ${err && err.stack}`)
      return sendError(reply, 500, ERR_INTERNAL)
    }
    if (request.is404) return sendError(reply, 404, ERR_NOT_FOUND)
    const config = request.routeOptions.config || {}
    if (config.kind === 'method') return methodNotAllowed(request, reply)
    if (config.kind === undefined) {
      // a plugin's own route, /static/: @fastify/send's 403 for a path that climbs out
      // of the folder, 400 for a NUL in it, as JSON with their status
      return sendError(reply, status, errorBody((STATUS_CODES[status] || 'bad request').toLowerCase()))
    }
    if (config.kind === 'route') {
      if (request.headers.token !== token) return sendError(reply, 401, ERR_TOKEN)
      if (request.routeOptions.url === '/user/:id/') {
        if (repo === null) return sendError(reply, 404, ERR_NO_DB)
        if (parseUserId(request.params.id) === null) return sendError(reply, 404, ERR_NOT_FOUND)
      }
    }
    return sendError(reply, 400, errorBody(BODY_ERRORS[err.code] || 'could not read the request body'))
  })

  return app
}

module.exports = { buildApp, newCache, MAX_BODY }
