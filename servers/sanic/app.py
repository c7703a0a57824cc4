"""sanic benchmark server: sanic's own HTTP server and worker processes.

Started as `python app.py`; sanic's main process spawns BENCH_WORKERS worker
processes which each import this module, so each builds its own pool (one pool
per process, opened in before_server_start, closed in after_server_stop), and each
listens on a socket of its own (SO_REUSEPORT, see own_listening_socket).
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket

from jinja2 import Environment, FileSystemLoader
from sanic import Blueprint, Request, Sanic
from sanic.exceptions import MethodNotAllowed, NotFound
from sanic.response import HTTPResponse, html, json, text
from sanic.server.protocols.websocket_protocol import WebSocketProtocol
from sanic.server.websockets.frame import WebsocketFrameAssembler
from sanic.server.websockets.impl import WebsocketImplProtocol
from websockets.frames import CloseCode

from benchcommon import (ERR_NO_DB, ERR_NOT_FOUND, ERR_TOKEN, FORTUNES_TEMPLATE,
                         TEMPLATE_DIR, InvalidBody, Settings, open_repository,
                         parse_patch_body, parse_user_id, ping_body, plain_body, suite,
                         to_json_body, token_ok)
from benchcommon.workloads import (DELAY_BODY, DELAY_SECONDS, ERR_TOO_LARGE, STATIC_URL,
                                   Upload, declared_too_large, static_dir)

settings = Settings.from_env()
# "per-worker" (production, see own_listening_socket) or "shared": sanic's default, one
# socket bound in the main process and accepted from by every worker; for a settings
# sweep (run_bench.py --server-env LISTEN_MODE=per-worker,shared)
LISTEN_MODE = os.environ.get("LISTEN_MODE", "per-worker")
if LISTEN_MODE not in ("per-worker", "shared"):
    raise SystemExit(f"LISTEN_MODE must be per-worker or shared, got {LISTEN_MODE!r}")
PING = ping_body(settings)
# sanic has no template engine of its own: Jinja2 used directly, autoescaping on (see
# the manifest's notes on why not sanic-ext's templating).
FORTUNES = Environment(loader=FileSystemLoader(TEMPLATE_DIR),
                       autoescape=True).get_template(FORTUNES_TEMPLATE)

app = Sanic("bench")
# Errors (unknown route, wrong method) as JSON too, like the contract's error bodies.
app.config.FALLBACK_ERROR_FORMAT = "json"
# SIGTERM: in-flight requests get at most 2 s to finish (sanic's default, 15 s, would
# keep a stop waiting on clients that keep their connections busy).
app.config.GRACEFUL_SHUTDOWN_TIMEOUT = 2.0
# /ws/: sanic's own WebSocket (websockets' sans-I/O protocol). Its message limit
# (WEBSOCKET_MAX_SIZE, 1 MiB) is above the contract's 64 KiB and left as it is; its
# keepalive ping (every 20 s, closing a connection whose pong takes over 20 s) is off:
# the contract has no server heartbeat and no idle close under 60 s.
app.config.WEBSOCKET_PING_INTERVAL = None
# sanic's default logging config puts its WebSocket logger at INFO, where websockets logs
# one "connection closed" line per connection: warnings only, like the access log's off.
logging.getLogger("sanic.websockets").setLevel(logging.WARNING)


def reserve_address(host: str, port: int) -> socket.socket:
    """The main process's socket: bound with SO_REUSEPORT but never listened on, so it
    holds the address for the workers and takes no connection itself."""
    family, type_, proto, _, addr = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    sock = socket.socket(family, type_, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(addr)
    sock.set_inheritable(True)
    return sock


@app.before_server_start
async def own_listening_socket(app: Sanic) -> None:
    # sanic hands every worker the main process's one socket: one shared accept queue,
    # and the worker that wakes first accepts every pending connection (64 wrk
    # connections landed on 2-4 of the 8 workers).  Each worker instead binds a
    # SO_REUSEPORT socket of its own to the same address and puts it in place of the
    # inherited one (same descriptor number, before sanic listens on it), so the
    # kernel spreads new connections over the workers' queues.
    inherited = app.state.server_info[0].settings.get("sock")
    if inherited is None or LISTEN_MODE == "shared":
        return
    own = socket.socket(inherited.family, socket.SOCK_STREAM)
    own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    own.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    own.bind(inherited.getsockname())
    os.dup2(own.fileno(), inherited.fileno())
    own.close()


@app.before_server_start
async def open_db(app: Sanic) -> None:
    # Per worker process: the whole pool (BENCH_DB_POOL_SIZE connections) is opened
    # here, before the worker accepts requests; None for BENCH_DB=none.
    app.ctx.repo = await open_repository(settings)


@app.after_server_start
async def stop_on_main_process_order(app: Sanic) -> None:
    # sanic's main process stops each worker (SIGINT) when it gets SIGTERM.  A SIGTERM
    # sent to the whole process group (the harness, a terminal, a service manager)
    # would also reach the worker directly and stop it a second time in the middle of
    # its cleanup (pool close interrupted, "Event loop stopped" errors): the worker
    # leaves SIGTERM to the main process and acts on its order only.
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, lambda: None)


@app.before_server_stop
async def shield_cleanup(app: Sanic) -> None:
    # Shutdown has begun (sanic has dropped its handlers): a late signal must not
    # interrupt draining requests or closing the pool.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)


@app.after_server_stop
async def close_db(app: Sanic) -> None:
    repo = getattr(app.ctx, "repo", None)
    if repo is not None:
        await repo.close()


@app.exception(NotFound, MethodNotAllowed)
async def http_error(request: Request, exc: Exception) -> HTTPResponse:
    return json({"error": str(exc) or "not found"}, status=getattr(exc, "status_code", 404))


@app.get("/ping/")
async def ping(request: Request) -> HTTPResponse:
    return json(PING)


@app.route("/user/<raw_id>/", methods=["GET", "PATCH"])
async def user(request: Request, raw_id: str) -> HTTPResponse:
    if not token_ok(request.headers.get("token"), settings):
        return json(ERR_TOKEN, status=401)
    repo = request.app.ctx.repo
    if repo is None:
        return json(ERR_NO_DB, status=404)
    user_id = parse_user_id(raw_id)
    if user_id is None:
        return json(ERR_NOT_FOUND, status=404)
    if request.method == "GET":
        found = await repo.get_user(user_id)
    else:
        try:
            username, email = parse_patch_body(request.body)
        except InvalidBody as exc:
            return json({"error": str(exc)}, status=400)
        found = await repo.update_user(user_id, username, email)
    if found is None:
        return json(ERR_NOT_FOUND, status=404)
    return json(found)


def _params(request: Request) -> tuple[str | None, str | None, str | None]:
    # keep_blank_values: "?param1=" is an empty value, not a missing one.
    args = request.get_args(keep_blank_values=True)
    return args.get("param1"), args.get("param2"), args.get("param3")


@app.get("/plain/")
async def plain(request: Request) -> HTTPResponse:
    if not token_ok(request.headers.get("token"), settings):
        return json(ERR_TOKEN, status=401)
    return text(plain_body(*_params(request)))


@app.get("/to_json/")
async def to_json(request: Request) -> HTTPResponse:
    if not token_ok(request.headers.get("token"), settings):
        return json(ERR_TOKEN, status=401)
    return json(to_json_body(*_params(request)))


def _suite_problem(request: Request) -> HTTPResponse | None:
    """The database suite's checks before any work: token (401), then database (404)."""
    if not token_ok(request.headers.get("token"), settings):
        return json(ERR_TOKEN, status=401)
    if request.app.ctx.repo is None:
        return json(ERR_NO_DB, status=404)
    return None


@app.get("/queries/")
async def queries(request: Request) -> HTTPResponse:
    problem = _suite_problem(request)
    return problem or json(await suite.queries(request.app.ctx.repo, request.args.get("n")))


@app.get("/updates/")
async def updates(request: Request) -> HTTPResponse:
    problem = _suite_problem(request)
    return problem or json(await suite.updates(request.app.ctx.repo, request.args.get("n")))


@app.get("/fortunes/")
async def fortunes(request: Request) -> HTTPResponse:
    problem = _suite_problem(request)
    if problem:
        return problem
    rows = await suite.fortunes(request.app.ctx.repo)
    return html(FORTUNES.render(fortunes=rows))       # text/html; charset=utf-8


@app.get("/cached/")
async def cached(request: Request) -> HTTPResponse:
    problem = _suite_problem(request)
    return problem or json(await suite.cached(request.app.ctx.repo, request.args.get("n")))


@app.post("/upload/", stream=True)
async def upload(request: Request) -> HTTPResponse:
    """A streaming route: the body is read chunk by chunk as it arrives (request.stream)
    and never held whole; sanic reads and drops whatever a handler left unread (up to
    REQUEST_MAX_SIZE, 100 MB by default, above the 8 MiB limit: left as it is)."""
    if not token_ok(request.headers.get("token"), settings):
        return json(ERR_TOKEN, status=401)
    if declared_too_large(request.headers.get("content-length")):
        return json(ERR_TOO_LARGE, status=413)
    body = Upload()
    while (chunk := await request.stream.read()) is not None:
        if not body.add(chunk):
            return json(ERR_TOO_LARGE, status=413)
    return json(body.answer())


@app.get("/delay/")
async def delay(request: Request) -> HTTPResponse:
    if not token_ok(request.headers.get("token"), settings):
        return json(ERR_TOKEN, status=401)
    await asyncio.sleep(DELAY_SECONDS)       # the event loop serves others meanwhile
    return text(DELAY_BODY)                  # text/plain; charset=utf-8


# /ws/ in a blueprint of its own so that its token check, a request middleware, runs
# before the upgrade for this route only (sanic does the handshake before the handler
# runs, and a blueprint's middleware is attached to its own routes alone).
ws = Blueprint("ws")


@ws.on_request
async def ws_token(request: Request) -> HTTPResponse | None:
    if not token_ok(request.headers.get("token"), settings):
        return json(ERR_TOKEN, status=401)
    return None


class Utf8CheckingAssembler(WebsocketFrameAssembler):
    """sanic's message assembler, plus RFC 6455 §8.1 for text: sanic 25.12 decodes a text
    message with a strict UTF-8 decoder but lets the UnicodeDecodeError end the task that
    feeds frames to it (logged "Task exception was never retrieved"), so the connection
    stayed open and the handler waited forever. Failed here with 1007, as websockets' own
    connections do."""

    async def put(self, frame) -> None:
        try:
            await super().put(frame)
        except UnicodeDecodeError as exc:
            self.protocol.fail_connection(CloseCode.INVALID_DATA,
                                          f"{exc.reason} at position {exc.start}")


class EchoWebSocketProtocol(WebSocketProtocol):
    """sanic's WebSocket protocol (app.run(protocol=...)) with the assembler above, put in
    place as the handshake ends: no frame has been handed to the old one by then (no await
    between the connection's start and this line)."""

    async def websocket_handshake(self, request, subprotocols=None):
        conn = await super().websocket_handshake(request, subprotocols)
        conn.assembler = Utf8CheckingAssembler(conn)
        return conn


@ws.websocket("/ws/")
async def echo(request: Request, conn: WebsocketImplProtocol) -> None:
    # one asyncio task per connection on the worker's event loop; text comes as str and
    # goes back as text, binary as bytes and goes back as binary
    async for message in conn:
        await conn.send(message)


app.blueprint(ws)


if (folder := static_dir()) is not None:
    # sanic's own static handler: Last-Modified and If-Modified-Since (304) by default,
    # single ranges with use_content_range; a path with ".." or that resolves outside the
    # folder is a 404. No ETag: sanic's handler sets none.
    app.static(STATIC_URL, folder, use_content_range=True)


if __name__ == "__main__":
    app.run(
        # the address, reserved for the workers' own sockets (own_listening_socket), or
        # sanic's default: one socket it binds and listens on for every worker
        **({"host": settings.host, "port": settings.port} if LISTEN_MODE == "shared"
           else {"sock": reserve_address(settings.host, settings.port)}),
        # BENCH_WORKERS worker processes, managed by sanic's own main process
        # (SIGTERM/SIGINT to it stops every worker).
        workers=settings.workers,
        single_process=False,
        # sanic's WebSocketProtocol with the UTF-8 failure above (1007)
        protocol=EchoWebSocketProtocol,
        # Production: no debug (no auto-reload, no debug checks), no per-request
        # access log, no start-up banner.
        debug=False,
        auto_reload=False,
        access_log=False,
        motd=False,
    )
