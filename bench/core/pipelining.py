"""The `pipelined` test: `plain` with HTTP/1.1 pipelining, as TechEmpower's plaintext
measured it (16 requests per batch). Pure: its name, its depth, which settings it
cannot run with, and what its figures mean.

Each client connection writes `depth` requests at once and writes the next batch when
the last answer of this one is in (wrk's own pipelining: a Lua `request()` that returns
several requests, wrk_scripts/pipelined.lua). So:
- req/s counts every answer, as for `plain`;
- latency is a batch's: wrk times from the batch's write to its last answer, one value
  per batch (its src/wrk.c records when `pending` reaches 0), so the tables say so;
- a server that answers a batch one request at a time is measured as it is: its req/s
  then stays near its `plain` figure, which the pipelined table shows beside it.
"""
from __future__ import annotations

PIPELINED_TEST = "pipelined"
REQUESTS_OF = "plain"               # its requests are this test's, batched
PATH = "/plain/"                    # the endpoint every pipelined request asks
DEFAULT_DEPTH = 16                  # TechEmpower's plaintext
MIN_DEPTH, MAX_DEPTH = 2, 256       # 1 is `plain`; wrk's buffers hold far more than 256
# the generators whose closed loop pipelines (bench.load's registry: each generator's
# `pipelines`; named here because core imports nothing from load, and
# tests/unit/test_pipelining.py checks that the two agree). oha, k6 and h2load send one
# request per connection at a time.
PIPELINING_GENERATORS = ("wrk",)


def problems(tests, depth: int, closed_loop, protocols, rates, connection_modes,
             burst: float) -> list[str]:
    """What a run cannot do with the pipelined test under these settings, a sentence each
    (empty: fine); `closed_loop`: the generators that will run the closed loop. Only
    --pipeline is checked when the test is not asked for."""
    out = []
    if type(depth) is not int or not MIN_DEPTH <= depth <= MAX_DEPTH:
        out.append(f"--pipeline must be a whole number from {MIN_DEPTH} to {MAX_DEPTH} "
                   f"(requests per batch; 1 is the plain test), got {depth!r}")
    if PIPELINED_TEST not in tests:
        return out
    others = [g for g in closed_loop if g not in PIPELINING_GENERATORS]
    if others:
        out.append(f"--tests pipelined: only {', '.join(PIPELINING_GENERATORS)} pipelines "
                   f"HTTP/1.1 requests; --generator {','.join(others)} sends one request per "
                   f"connection at a time. Measure pipelined in a run of its own with wrk")
    http2 = [p for p in protocols if p in ("h2", "h2c")]
    if http2:
        out.append(f"--tests pipelined is HTTP/1.1 pipelining; HTTP/2 runs requests side by "
                   f"side on streams instead (--streams): leave out --protocol "
                   f"{','.join(http2)} or the test")
    if rates:
        out.append("--tests pipelined with --rate: the open-model generators (oha, k6) do "
                   "not pipeline; a fixed rate of batches is not what the field measures")
    if "close" in connection_modes:
        out.append("--tests pipelined with --connection-mode close: a connection closed "
                   "after its first answer has nothing to pipeline")
    if burst > 0:
        out.append("--tests pipelined with --burst (the stress preset): the burst opens a new "
                   "connection per request (Connection: close), which cannot pipeline; "
                   "measure pipelined without it")
    return out


def depth_of(test: str, depth: int) -> int:
    """Requests per batch of a case of `test`: `depth` for pipelined, 1 for the others."""
    return depth if test == PIPELINED_TEST else 1
