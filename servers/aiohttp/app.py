"""aiohttp benchmark server, run by gunicorn with aiohttp's uvloop worker class:

    python -m gunicorn app:app --worker-class aiohttp.GunicornUVLoopWebWorker -w W ...

Each gunicorn worker process imports this module and runs `app` on uvloop; the pool
lives in a cleanup_ctx, so it is opened (all connections) before the worker serves
and closed when it stops: one pool per process.
"""
from __future__ import annotations

import asyncio
from typing import AsyncIterator, Awaitable, Callable

import aiohttp_jinja2
import jinja2
from aiohttp import WSCloseCode, WSMsgType, web
from aiohttp.http import WebSocketError

from benchcommon import (ERR_NO_DB, ERR_NOT_FOUND, ERR_TOKEN, FORTUNES_TEMPLATE,
                         TEMPLATE_DIR, InvalidBody, Settings, open_repository,
                         parse_patch_body, parse_user_id, ping_body, plain_body, suite,
                         to_json_body, token_ok)
from benchcommon.workloads import (DELAY_BODY, DELAY_SECONDS, ERR_METHOD, ERR_TOO_LARGE,
                                   READ_CHUNK, STATIC_URL, Upload, compression_on,
                                   declared_too_large, static_dir)

settings = Settings.from_env()
PING = ping_body(settings)
ERR_BODY_TOO_LARGE = {"error": "body too large"}
REPO = web.AppKey("repo", object)


async def database(app: web.Application) -> AsyncIterator[None]:
    app[REPO] = await open_repository(settings)   # None for BENCH_DB=none
    yield
    if app[REPO] is not None:
        await app[REPO].close()


async def ping(request: web.Request) -> web.Response:
    return web.json_response(PING)


async def get_user(request: web.Request) -> web.Response:
    return await _user(request, patch=False)


async def patch_user(request: web.Request) -> web.Response:
    return await _user(request, patch=True)


async def _user(request: web.Request, patch: bool) -> web.Response:
    if not token_ok(request.headers.get("token"), settings):
        return web.json_response(ERR_TOKEN, status=401)
    repo = request.app[REPO]
    if repo is None:
        return web.json_response(ERR_NO_DB, status=404)
    user_id = parse_user_id(request.match_info["raw_id"])
    if user_id is None:
        return web.json_response(ERR_NOT_FOUND, status=404)
    if patch:
        try:
            username, email = parse_patch_body(await request.read())
        except InvalidBody as exc:
            return web.json_response({"error": str(exc)}, status=400)
        except web.HTTPRequestEntityTooLarge:
            # over client_max_size (aiohttp's 1 MiB): a bad body like any other, a JSON
            # 400 instead of aiohttp's text/plain 413 (found by tests/integration/test_fuzz.py)
            return web.json_response(ERR_BODY_TOO_LARGE, status=400)
        found = await repo.update_user(user_id, username, email)
    else:
        found = await repo.get_user(user_id)
    if found is None:
        return web.json_response(ERR_NOT_FOUND, status=404)
    return web.json_response(found)


def _params(request: web.Request) -> tuple[str | None, str | None, str | None]:
    q = request.query    # decoded by yarl; "?param1=" is an empty value, not missing
    return q.get("param1"), q.get("param2"), q.get("param3")


async def plain(request: web.Request) -> web.Response:
    if not token_ok(request.headers.get("token"), settings):
        return web.json_response(ERR_TOKEN, status=401)
    return web.Response(text=plain_body(*_params(request)))   # text/plain; charset=utf-8


async def to_json(request: web.Request) -> web.Response:
    if not token_ok(request.headers.get("token"), settings):
        return web.json_response(ERR_TOKEN, status=401)
    return web.json_response(to_json_body(*_params(request)))


def _suite_problem(request: web.Request) -> web.Response | None:
    """The database suite's checks before any work: token (401), then database (404)."""
    if not token_ok(request.headers.get("token"), settings):
        return web.json_response(ERR_TOKEN, status=401)
    if request.app[REPO] is None:
        return web.json_response(ERR_NO_DB, status=404)
    return None


async def queries(request: web.Request) -> web.Response:
    problem = _suite_problem(request)
    return problem or web.json_response(
        await suite.queries(request.app[REPO], request.query.get("n")))


async def updates(request: web.Request) -> web.Response:
    problem = _suite_problem(request)
    return problem or web.json_response(
        await suite.updates(request.app[REPO], request.query.get("n")))


async def fortunes(request: web.Request) -> web.Response:
    problem = _suite_problem(request)
    if problem:
        return problem
    rows = await suite.fortunes(request.app[REPO])
    # text/html; charset=utf-8, autoescaped (aiohttp_jinja2.setup's default)
    return aiohttp_jinja2.render_template(FORTUNES_TEMPLATE, request, {"fortunes": rows})


async def cached(request: web.Request) -> web.Response:
    problem = _suite_problem(request)
    return problem or web.json_response(
        await suite.cached(request.app[REPO], request.query.get("n")))


async def upload(request: web.Request) -> web.Response:
    """The body streamed through the CRC as aiohttp's StreamReader hands it over (chunks
    of whatever arrived, at most READ_CHUNK), never held whole; client_max_size (1 MiB)
    limits only request.read() / post(), so it needs no raising here."""
    if not token_ok(request.headers.get("token"), settings):
        return web.json_response(ERR_TOKEN, status=401)
    if declared_too_large(request.headers.get("Content-Length")):
        return web.json_response(ERR_TOO_LARGE, status=413)
    body = Upload()
    async for chunk in request.content.iter_chunked(READ_CHUNK):
        if not body.add(chunk):
            return web.json_response(ERR_TOO_LARGE, status=413)
    return web.json_response(body.answer())


async def delay(request: web.Request) -> web.Response:
    if not token_ok(request.headers.get("token"), settings):
        return web.json_response(ERR_TOKEN, status=401)
    await asyncio.sleep(DELAY_SECONDS)      # the event loop serves others meanwhile
    return web.Response(text=DELAY_BODY)     # text/plain; charset=utf-8


class MaskedFramesOnly:
    """RFC 6455 §5.1 (a server closes the connection on a client frame that is not
    masked), which aiohttp's WebSocketReader does not check (it is shared with the client
    side; aiohttp's THREAT_MODEL.md, 3.1). It sits between the connection and the reader
    and follows the frame headers going through (2 to 14 bytes each; payloads are skipped
    by count, not copied): an unmasked one fails the connection as the reader fails it on
    its own protocol errors (the queue gets a WebSocketError, receive() closes with its
    code, 1002), after the frames that came before it."""

    __slots__ = ("reader", "queue", "head", "skip")

    def __init__(self, reader, queue) -> None:
        self.reader, self.queue = reader, queue
        self.head = b""      # a header cut by the end of a chunk
        self.skip = 0        # payload bytes of the current frame still to come

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        pos, end = 0, len(data)
        while pos < end:
            if self.skip:
                step = min(self.skip, end - pos)
                self.skip -= step
                pos += step
                continue
            kept = len(self.head)
            head = self.head + data[pos:pos + 14 - kept]
            if len(head) >= 2 and not head[1] & 0x80:
                if pos:
                    self.reader.feed_data(data[:pos])
                self.queue.set_exception(
                    WebSocketError(WSCloseCode.PROTOCOL_ERROR, "unmasked client frame"))
                return True, b""
            length = head[1] & 0x7F if len(head) >= 2 else 0
            size = 6 + (2 if length == 126 else 8 if length == 127 else 0)
            if len(head) < size:
                self.head = head
                break
            self.head = b""
            self.skip = length if length < 126 else int.from_bytes(head[2:size - 4], "big")
            pos += size - kept
        return self.reader.feed_data(data)

    def feed_eof(self) -> None:
        self.reader.feed_eof()


class EchoWebSocketResponse(web.WebSocketResponse):
    """aiohttp's WebSocketResponse with MaskedFramesOnly put in front of its reader as the
    connection switches to WebSocket (before any frame reaches the reader)."""

    def _post_start(self, request, protocol, writer) -> None:
        super()._post_start(request, protocol, writer)
        request.protocol._payload_parser = MaskedFramesOnly(self._parser, self._reader)


async def ws_echo(request: web.Request) -> web.StreamResponse:
    """aiohttp's WebSocket: the token checked before the handshake, then every message
    echoed with its own type, in this request's task on the worker's event loop.
    Defaults kept: max_msg_size 4 MiB, autoping (a ping answered with its pong), autoclose
    (a close answered, then the connection ends), no heartbeat, no receive timeout."""
    if not token_ok(request.headers.get("token"), settings):
        return web.json_response(ERR_TOKEN, status=401)
    ws = EchoWebSocketResponse()
    await ws.prepare(request)
    async for msg in ws:
        if msg.type is WSMsgType.TEXT:
            await ws.send_str(msg.data)
        elif msg.type is WSMsgType.BINARY:
            await ws.send_bytes(msg.data)
    return ws


@web.middleware
async def compress(request: web.Request,
                   handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                   ) -> web.StreamResponse:
    """BENCH_COMPRESSION=1: aiohttp's own response compression on every response, static
    files included (StreamResponse.enable_compression: the coding is chosen from the
    request's Accept-Encoding when the response starts; aiohttp sets no Vary itself).
    A Range request is answered as is: aiohttp would compress the slice and keep the
    identity Content-Range, which then describes neither representation."""
    response = await handler(request)
    if "Range" not in request.headers:
        response.enable_compression()
    response.headers.add("Vary", "Accept-Encoding")
    return response


async def method_not_allowed(request: web.Request) -> web.Response:
    return web.json_response(ERR_METHOD, status=405)


def create_app() -> web.Application:
    app = web.Application(middlewares=[compress] if compression_on() else [])
    app.cleanup_ctx.append(database)
    aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True)
    app.router.add_get("/ping/", ping, allow_head=False)
    app.router.add_get("/user/{raw_id}/", get_user, allow_head=False)
    app.router.add_patch("/user/{raw_id}/", patch_user)
    app.router.add_get("/plain/", plain, allow_head=False)
    app.router.add_get("/to_json/", to_json, allow_head=False)
    suite_routes = {"/queries/": queries, "/updates/": updates, "/fortunes/": fortunes,
                    "/cached/": cached}
    for path, handler in suite_routes.items():
        app.router.add_get(path, handler, allow_head=False)
    # Any other method on a contract path: a JSON 405 like every other server, not
    # aiohttp's text/plain "405: Method Not Allowed" (found by tests/integration/
    # test_fuzz.py). A "*" route is tried only after the resource's own methods, so the
    # contract's requests never reach it, and no middleware runs per request.
    app.router.add_post("/upload/", upload)
    app.router.add_get("/delay/", delay, allow_head=False)
    app.router.add_get("/ws/", ws_echo, allow_head=False)
    for path in ("/ping/", "/user/{raw_id}/", "/plain/", "/to_json/", *suite_routes,
                 "/upload/", "/delay/", "/ws/"):
        app.router.add_route("*", path, method_not_allowed)
    # aiohttp's own static handler (StaticResource / FileResponse): ETag, Last-Modified,
    # 304, single ranges; a path that leaves the folder is refused (403/404) by it.
    folder = static_dir()
    if folder is not None:
        app.router.add_static(STATIC_URL, folder)
    return app


app = create_app()
