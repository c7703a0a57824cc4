"""FastAPI benchmark server, run by uvicorn in W worker processes managed by gunicorn:

    python -m gunicorn app:app --worker-class benchcommon.uvicorn_worker.UvloopHttptoolsWorker \
        --workers W --reuse-port ...

Idiomatic FastAPI: the token is a Header parameter, the query values are Query
parameters, the PATCH body is a Pydantic model.  Responses are built directly as
JSONResponse / PlainTextResponse (FastAPI's documented fast path: no response_model
validation, no jsonable_encoder pass).  Each worker process runs the lifespan, so
each has its own pool, opened before it serves and closed when it stops.
"""
from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from typing import Annotated, AsyncIterator

from fastapi import FastAPI, Header, Request, WebSocket
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.gzip import GZipMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from benchcommon import (ERR_NO_DB, ERR_NOT_FOUND, ERR_TOKEN, FORTUNES_TEMPLATE,
                         TEMPLATE_DIR, Settings, open_repository, parse_user_id, ping_body,
                         plain_body, suite, text_problem, to_json_body, token_ok)
from benchcommon.workloads import (DELAY_BODY, DELAY_SECONDS, ERR_TOO_LARGE, STATIC_URL,
                                   Upload, compression_on, declared_too_large, static_dir)

settings = Settings.from_env()
PING = ping_body(settings)
# FastAPI's documented templating: Starlette's Jinja2Templates (autoescaping on).
templates = Jinja2Templates(directory=TEMPLATE_DIR)
Token = Annotated[str | None, Header()]


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # Per worker process: the whole pool (BENCH_DB_POOL_SIZE connections) is opened
    # before the worker accepts requests; None for BENCH_DB=none.
    app.state.repo = await open_repository(settings)
    try:
        yield
    finally:
        if app.state.repo is not None:
            await app.state.repo.close()


# No interactive docs / OpenAPI schema routes in production.
app = FastAPI(lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
if compression_on():
    # FastAPI's documented compression, Starlette's GZipMiddleware, at its defaults
    # (compresslevel 9, minimum_size 500 bytes); gzip only (it has no br).
    app.add_middleware(GZipMiddleware)
if (folder := static_dir()) is not None:
    # FastAPI's documented static files, Starlette's StaticFiles (FileResponse: ETag,
    # Last-Modified, 304, Range; a path outside the folder is a 404).
    app.mount(STATIC_URL.rstrip("/"), StaticFiles(directory=folder), name="static")


class UserPatch(BaseModel):
    # strict: a number or a bool is not silently turned into a string; extra keys ignored.
    model_config = ConfigDict(strict=True, extra="ignore")

    username: str = Field(min_length=1, max_length=256)
    email: str = Field(max_length=256)

    @field_validator("username", "email")
    @classmethod
    def storable(cls, value: str) -> str:
        # NUL / lone surrogate: the database would reject them (a 5xx); refuse here.
        problem = text_problem(value, allow_empty=True)
        if problem:
            raise ValueError(problem)
        return value


def _error(status: int, body: dict) -> JSONResponse:
    return JSONResponse(body, status_code=status)


def _request_problem(request: Request, reason: str) -> JSONResponse:
    """A request FastAPI rejected before the endpoint ran (bad PATCH body): answer in
    the contract's order, token first (401), then no database / bad id (404), then 400."""
    if not token_ok(request.headers.get("token"), settings):
        return _error(401, ERR_TOKEN)
    if request.url.path.startswith("/user/"):
        if request.app.state.repo is None:
            return _error(404, ERR_NO_DB)
        if parse_user_id(request.path_params.get("raw_id")) is None:
            return _error(404, ERR_NOT_FOUND)
    return _error(400, {"error": reason})


@app.exception_handler(RequestValidationError)
async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
    # The contract's {"error": ...} shape (status 400) instead of FastAPI's 422 {"detail": [...]}.
    errors = exc.errors()
    reason = "invalid body"
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.get("loc", ())[1:] if isinstance(p, str))
        reason = f"invalid body: {where + ' ' if where else ''}{first.get('msg', '')}".strip()
    return _request_problem(request, reason)


@app.exception_handler(StarletteHTTPException)
async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    # 404 unknown route, 405 wrong method, 400 "error parsing the body" (e.g. a JSON
    # body nested too deep or not UTF-8): all as {"error": ...}.
    if exc.status_code == 400:
        return _request_problem(request, "invalid body: " + str(exc.detail))
    return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code,
                        headers=getattr(exc, "headers", None))


@app.get("/ping/")
async def ping() -> JSONResponse:
    return JSONResponse(PING)


def _user_target(raw_id: str, request: Request, token: str | None):
    """(repository, id) for a user request, or the error response (token, database, id)."""
    if not token_ok(token, settings):
        return None, _error(401, ERR_TOKEN)
    repo = request.app.state.repo
    if repo is None:
        return None, _error(404, ERR_NO_DB)
    user_id = parse_user_id(raw_id)
    if user_id is None:
        return None, _error(404, ERR_NOT_FOUND)
    return (repo, user_id), None


def _user_response(found: dict | None) -> JSONResponse:
    return _error(404, ERR_NOT_FOUND) if found is None else JSONResponse(found)


@app.get("/user/{raw_id}/")
async def get_user(raw_id: str, request: Request, token: Token = None) -> JSONResponse:
    target, problem = _user_target(raw_id, request, token)
    if problem:
        return problem
    repo, user_id = target
    return _user_response(await repo.get_user(user_id))


@app.patch("/user/{raw_id}/")
async def patch_user(raw_id: str, body: UserPatch, request: Request,
                     token: Token = None) -> JSONResponse:
    target, problem = _user_target(raw_id, request, token)
    if problem:
        return problem
    repo, user_id = target
    return _user_response(await repo.update_user(user_id, body.username, body.email))


@app.get("/plain/")
async def plain(token: Token = None, param1: str | None = None, param2: str | None = None,
                param3: str | None = None) -> PlainTextResponse:
    if not token_ok(token, settings):
        return _error(401, ERR_TOKEN)
    return PlainTextResponse(plain_body(param1, param2, param3))


@app.get("/to_json/")
async def to_json(token: Token = None, param1: str | None = None, param2: str | None = None,
                  param3: str | None = None) -> JSONResponse:
    if not token_ok(token, settings):
        return _error(401, ERR_TOKEN)
    return JSONResponse(to_json_body(param1, param2, param3))


def _suite_repo(request: Request, token: str | None):
    """The database suite's checks before any work: (repository, None), or (None, the
    error response): token (401), then database (404)."""
    if not token_ok(token, settings):
        return None, _error(401, ERR_TOKEN)
    repo = request.app.state.repo
    if repo is None:
        return None, _error(404, ERR_NO_DB)
    return repo, None


# n is a plain str Query parameter: the contract reads any value (even "abc") as 1,
# so FastAPI's int validation (a 400 for "abc") must not see it.
@app.get("/queries/")
async def queries(request: Request, token: Token = None, n: str | None = None) -> JSONResponse:
    repo, problem = _suite_repo(request, token)
    return problem or JSONResponse(await suite.queries(repo, n))


@app.get("/updates/")
async def updates(request: Request, token: Token = None, n: str | None = None) -> JSONResponse:
    repo, problem = _suite_repo(request, token)
    return problem or JSONResponse(await suite.updates(repo, n))


@app.get("/fortunes/")
async def fortunes(request: Request, token: Token = None) -> HTMLResponse:
    repo, problem = _suite_repo(request, token)
    if problem:
        return problem
    rows = await suite.fortunes(repo)
    # text/html; charset=utf-8
    return templates.TemplateResponse(request, FORTUNES_TEMPLATE, {"fortunes": rows})


@app.get("/cached/")
async def cached(request: Request, token: Token = None, n: str | None = None) -> JSONResponse:
    repo, problem = _suite_repo(request, token)
    return problem or JSONResponse(await suite.cached(repo, n))


@app.post("/upload/")
async def upload(request: Request, token: Token = None) -> JSONResponse:
    """The body streamed through the CRC as uvicorn receives it (request.stream()), never
    held whole; uvicorn and Starlette set no body limit, so the 8 MiB one is this one."""
    if not token_ok(token, settings):
        return _error(401, ERR_TOKEN)
    if declared_too_large(request.headers.get("content-length")):
        return _error(413, ERR_TOO_LARGE)
    body = Upload()
    async for chunk in request.stream():
        if not body.add(chunk):
            return _error(413, ERR_TOO_LARGE)
    return JSONResponse(body.answer())


@app.get("/delay/")
async def delay(token: Token = None) -> PlainTextResponse:
    if not token_ok(token, settings):
        return _error(401, ERR_TOKEN)
    await asyncio.sleep(DELAY_SECONDS)       # the event loop serves others meanwhile
    return PlainTextResponse(DELAY_BODY)


@app.websocket("/ws/")
async def ws_echo(websocket: WebSocket, token: Token = None) -> None:
    """Starlette's WebSocket on uvicorn's websockets-sansio protocol: the token checked
    before the handshake (a 401 through the ASGI WebSocket Denial Response extension),
    then every message echoed with its own type, in this connection's task on the
    worker's event loop. Fragments, ping/pong, UTF-8 (1007), masking (1002) and the close
    handshake are the protocol's (websockets' sans-I/O ServerProtocol under uvicorn)."""
    if not token_ok(token, settings):
        await websocket.send_denial_response(_error(401, ERR_TOKEN))
        return
    await websocket.accept()
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        if (text := message.get("text")) is not None:
            await websocket.send_text(text)
        else:
            await websocket.send_bytes(message["bytes"])
