"""A fixed, seeded sequence of one case's requests, and the client that sends it over one
keep-alive connection, one request at a time: what a count (bench.runner.count) sends.

The requests are those the load generators draw for the test (the same endpoints, ids,
parameters and bodies: bench.load.h2load.paths, bench.load.oha_requests), drawn from
`random.Random(seed)`, so two counts of one case send the same bytes in the same order.
One connection and one request in flight: the server's work per request is then the same
every time, with no batching of requests that happened to arrive together.

A request that gets no answer, or an answer that is not 2xx, is an error; the client
reconnects after a closed connection and counts the connections it opened.
"""
from __future__ import annotations

import http.client
import random
import time
from dataclasses import dataclass
from typing import Callable

from bench.core import suite
from bench.core.mix import MIX_TEST, Mix
from bench.load.h2load import paths
from bench.load.oha_requests import update_bodies

ANSWER_TIMEOUT_S = 120.0      # a server under valgrind answers 20-50 times slower


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    body: bytes | None = None


def requests(test: str, count: int, seed: int, n: int | None = None,
             mix: Mix | None = None) -> list[Request]:
    """`count` requests of `test`, as its load draws them, from `seed`."""
    if test == MIX_TEST:
        if mix is None:
            raise ValueError("the mixed test's sequence needs its profile")
        rng = random.Random(seed)
        drawn = [mix.draw(rng) for _ in range(count)]
        by_endpoint = {e.key: iter(requests(e.test, count, rng.randrange(2**31), e.n))
                       for e in mix.endpoints}
        return [next(by_endpoint[e.key]) for e in drawn]
    if test == "update user":
        rng = random.Random(seed)
        bodies = update_bodies(seed, count)
        return [Request("PATCH", f"/user/{rng.randint(1, 10_000)}/", body.encode())
                for body in bodies]
    if test in suite.SUITE_TESTS:
        return [Request("GET", suite.path_for(test, n))] * count
    return [Request("GET", p) for p in paths(test, seed, n, count)]


@dataclass
class Sent:
    """What one `send` did."""
    requests: int
    errors: int
    connections: int               # TCP connections opened for it
    seconds: float
    first_error: str | None = None


class Client:
    """One keep-alive connection to the server (reopened if the server closes it)."""

    def __init__(self, host: str, port: int, token: str):
        self.host, self.port, self.token = host, port, token
        self.conn: http.client.HTTPConnection | None = None
        self.opened = 0

    def send(self, batch: list[Request], between: Callable[[], None] | None = None) -> Sent:
        """Each request once its answer to the one before is in; `between`, when given,
        is called after each answer (a count waits there for the server to go idle)."""
        errors, first, t0, opened = 0, None, time.monotonic(), self.opened
        for request in batch:
            problem = self._one(request)
            if problem is not None:
                errors += 1
                first = first or problem
            if between is not None:
                between()
        return Sent(len(batch), errors, self.opened - opened, time.monotonic() - t0, first)

    def _one(self, request: Request) -> str | None:
        headers = {"token": self.token}
        if request.body is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, self.port,
                                                       timeout=ANSWER_TIMEOUT_S)
                self.opened += 1
            try:
                self.conn.request(request.method, request.path, body=request.body,
                                  headers=headers)
                answer = self.conn.getresponse()
                answer.read()
            except (http.client.RemoteDisconnected, ConnectionResetError,
                    BrokenPipeError) as exc:
                # a keep-alive connection the server closed while idle: once more on a
                # new one; a request that fails on a fresh connection is an error
                self.close()
                if attempt == 2:
                    return f"{request.method} {request.path}: {type(exc).__name__}"
                continue
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                return f"{request.method} {request.path}: {type(exc).__name__}: {exc}"
            if answer.will_close:
                self.close()
            if not 200 <= answer.status < 300:
                return f"{request.method} {request.path}: HTTP {answer.status}"
            return None
        return None

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def endpoints(batch: list[Request]) -> dict[str, int]:
    """What a count records of its sequence: requests per method and endpoint
    ("GET /user/": 1000), the ids and parameters left out."""
    out: dict[str, int] = {}
    for request in batch:
        segment = request.path.split("?")[0].strip("/").split("/")[0]
        key = f"{request.method} /{segment}/"
        out[key] = out.get(key, 0) + 1
    return out
