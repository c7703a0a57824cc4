"""Every test `--tests` knows, in one line each: what its requests ask and what they
need, for `run_bench.py list` and the docs. The tests themselves are defined where their
rules live (bench.core.settings, suite, mix, pipelining); tests/unit/test_pipelining.py
checks that this list names exactly those."""
from __future__ import annotations

from bench.core import mix, pipelining, suite

# test -> (what needs to be there, what each request does)
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "get user": ("database", "GET /user/{id}/, id uniform in 1..10000"),
    "update user": ("database", "PATCH /user/{id}/ with a random username and email"),
    "plain": ("no database", "GET /plain/ with three random ASCII params, echoed as text"),
    "to json": ("no database", "GET /to_json/ with three random ASCII params, as JSON"),
    "queries": ("database suite", f"GET /queries/?n=N: N SELECTs (default n="
                                  f"{suite.DEFAULT_N['queries']})"),
    "updates": ("database suite", f"GET /updates/?n=N: N SELECTs and N UPDATEs (default n="
                                  f"{suite.DEFAULT_N['updates']})"),
    "fortunes": ("database suite", "GET /fortunes/: all rows, one added, sorted, an HTML "
                                   "template"),
    "cached": ("database suite", f"GET /cached/?n=N: N rows from an in-process cache "
                                 f"(default n={suite.DEFAULT_N['cached']})"),
    mix.MIX_TEST: ("database", "each request's endpoint drawn by the weights of --mix "
                               "(default: mixes/small-api.toml)"),
    pipelining.PIPELINED_TEST: ("no database", f"plain's requests, --pipeline of them "
                                               f"written at once on each connection "
                                               f"(default {pipelining.DEFAULT_DEPTH}; wrk)"),
    "static": ("no database", "GET /static/<size>.txt: a file of 1k, 64k or 1m (--size) by "
                              "the framework's static handler, no token"),
    "upload": ("no database", "POST /upload/ with a body of 64k or 1m (--size): its length "
                              "and CRC-32 answered"),
    "delay": ("no database", "GET /delay/: answered after 10 ms (with --connections 10000: "
                             "many connections waiting at once)"),
    "websocket": ("no database", "GET /ws/ upgraded to WebSocket, then text messages of 32b "
                                 "or 4k (--size) echoed, one in flight per connection (wsload)"),
}


# ---------------------------------------------------------------- the HTTP workloads
# (servers/README.md, "The HTTP workloads"; docs/tests-measured.md)
STATIC_TEST, UPLOAD_TEST, DELAY_TEST = "static", "upload", "delay"
WEBSOCKET_TEST = "websocket"
HTTP_WORKLOADS = (pipelining.PIPELINED_TEST, STATIC_TEST, UPLOAD_TEST, DELAY_TEST,
                  WEBSOCKET_TEST)
# the sizes a file, a body or a message can have, and each sized test's levels when
# --size is not given: the three files, the two bodies (a form's and a photo's),
# the two messages (a chat line's and a document update's)
SIZE_BYTES = {"32b": 32, "1k": 1024, "4k": 4096, "64k": 64 * 1024, "1m": 1024 * 1024}
DEFAULT_SIZES = {STATIC_TEST: ("1k", "64k", "1m"), UPLOAD_TEST: ("64k", "1m"),
                 WEBSOCKET_TEST: ("32b", "4k")}
# the sizes each sized test can have: the static files are those the harness writes
# (bench.infra.static_files); a body or a message any
VALID_SIZES = {STATIC_TEST: ("1k", "64k", "1m"), UPLOAD_TEST: tuple(SIZE_BYTES),
               WEBSOCKET_TEST: tuple(SIZE_BYTES)}
WS_DEFAULT_BYTES = 32
UPLOAD_LIMIT = 8 * 1024 * 1024          # bytes; one more is answered 413
DELAY_MS = 10
DELAY_BODY = f"delayed {DELAY_MS} ms"
PATHS = {STATIC_TEST: "/static/{size}.txt", UPLOAD_TEST: "/upload/", DELAY_TEST: "/delay/",
         WEBSOCKET_TEST: "/ws/"}


def sizes_for(test: str, sizes) -> tuple[str | None, ...]:
    """The size levels `test` is measured at: (None,) for a test without sizes."""
    if test not in DEFAULT_SIZES:
        return (None,)
    return tuple(s for s in sizes if s in VALID_SIZES[test]) if sizes else DEFAULT_SIZES[test]


def size_problem(sizes, tests) -> str | None:
    """What is wrong with --size for these --tests (None: nothing)."""
    if sizes is None:
        return None
    unknown = [s for s in sizes if s not in SIZE_BYTES]
    if unknown or not sizes:
        return (f"--size {','.join(unknown or sizes) or '(empty)'}: the sizes are "
                f"{', '.join(SIZE_BYTES)} (the static test's files, the upload test's bodies, the websocket test's messages)")
    if len(set(sizes)) != len(sizes):
        return f"--size lists a value twice: {','.join(sizes)}"
    if not set(tests) & set(DEFAULT_SIZES):
        return (f"--size applies to {', '.join(DEFAULT_SIZES)}; none of them is among "
                f"--tests {','.join(tests)}")
    for test in (t for t in tests if t in DEFAULT_SIZES):
        if not sizes_for(test, sizes):
            return (f"--size {','.join(sizes)} gives the {test} test no size: it has "
                    f"{', '.join(VALID_SIZES[test])}")
    return None


def title(test: str, size: str | None) -> str:
    """A sized test as the tables name it: "static 64k"."""
    return test if size is None else f"{test} {size}"


# the generators that can send each HTTP workload (the pipelined test's are
# bench.core.pipelining's); h2load is the HTTP/2 generator, a GET from a list
GENERATORS = {STATIC_TEST: ("wrk", "oha", "h2load"), DELAY_TEST: ("wrk", "oha", "h2load"),
              UPLOAD_TEST: ("wrk",), WEBSOCKET_TEST: ("wsload", "k6")}
WHY_NOT = {"k6": "k6 has no script for it yet",
           "oha": "oha sends one body file per run, not the sized bodies (-D) this test "
                  "checks yet"}


# the websocket test has a generator of its own (bench.load.wsload): its cases are
# measured with it whatever --generator names for the HTTP tests (as HTTP/2's are with
# h2load), or with k6 when --generator names it (k6_scripts/websocket.js: to measure k6
# against it); a generator that sends WebSocket only is refused for the others
OWN_GENERATOR = {WEBSOCKET_TEST: "wsload"}
WEBSOCKET_ONLY = ("wsload",)


def generator_of(test: str, generator: str) -> str:
    """The generator that measures `test` at a point of `generator`."""
    if test in OWN_GENERATOR and generator in GENERATORS[test]:
        return generator
    return OWN_GENERATOR.get(test, generator)


def generator_problems(tests, generators) -> list[str]:
    """The HTTP workloads among `tests` that one of `generators` (those that will run
    them: the closed loop's and, with --rate, the open model's) cannot send."""
    out = [f"--generator {g} sends WebSocket messages only; the {t} test is HTTP"
           for g in generators if g in WEBSOCKET_ONLY
           for t in tests if t != WEBSOCKET_TEST]
    for test in (t for t in tests if t in GENERATORS and t not in OWN_GENERATOR):
        for g in (g for g in generators if g not in GENERATORS[test]):
            out.append(f"--tests {test} with --generator {g}: {WHY_NOT.get(g, 'it cannot send it')}"
                       f"; it runs with {', '.join(GENERATORS[test])}")
    return out


# compression (--compression gzip,br): `to json` and `static` asked for with that
# Accept-Encoding, each encoding a case beside the uncompressed one, from a server started
# with BENCH_COMPRESSION=1 (the uncompressed case's server has none: its figures are the
# same as without --compression)
ENCODINGS = ("gzip", "br")
IDENTITY = "identity"
COMPRESSIBLE_TESTS = ("to json", STATIC_TEST)
# the generators that send an Accept-Encoding header of the harness's choosing
COMPRESSION_GENERATORS = ("wrk", "oha", "h2load")


def encodings_for(test: str, compression, unsupported=()) -> tuple[str, ...]:
    """The encodings a case of `test` is measured with: identity, then each asked for
    that the server's [unsupported] (`unsupported`) does not exclude."""
    if test not in COMPRESSIBLE_TESTS:
        return (IDENTITY,)
    return (IDENTITY, *supported_encodings(compression, unsupported))


def supported_encodings(compression, unsupported) -> tuple[str, ...]:
    """Those of `compression` a server with this [unsupported] is asked for."""
    if "compression" in unsupported:
        return ()
    return tuple(e for e in compression if f"compression.{e}" not in unsupported)


def compression_problems(compression, tests, generators) -> list[str]:
    unknown = [e for e in compression if e not in ENCODINGS]
    if unknown:
        return [f"unknown --compression {','.join(unknown)}; valid: {', '.join(ENCODINGS)}"]
    if len(set(compression)) != len(compression):
        return [f"--compression lists a value twice: {','.join(compression)}"]
    if compression and not set(tests) & set(COMPRESSIBLE_TESTS):
        return [f"--compression applies to {' and '.join(COMPRESSIBLE_TESTS)}; neither is "
                f"among --tests {','.join(tests)}"]
    others = [g for g in generators if g not in COMPRESSION_GENERATORS] if compression else []
    return [f"--compression with --generator {','.join(others)}: its scripts send no "
            f"Accept-Encoding yet; compression runs with {', '.join(COMPRESSION_GENERATORS)}"
            ] if others else []


def websocket_problems(tests, protocols, rates, connection_modes) -> list[str]:
    """What a run cannot do with the websocket test under these settings (empty: fine).
    Its h2 and h2c points are left out (bench.core.plan.points_of), the others kept."""
    if WEBSOCKET_TEST not in tests:
        return []
    out = []
    if all(p in ("h2", "h2c") for p in protocols):
        out.append(f"--tests websocket runs over HTTP/1.1's upgrade (ws, and wss with "
                   f"--protocol h1-tls); WebSocket over HTTP/2 (RFC 8441) is not measured, "
                   f"and --protocol {','.join(protocols)} leaves it no point")
    if rates:
        out.append("--tests websocket with --rate: wsload runs the closed loop only (one "
                   "message in flight per connection)")
    if "close" in connection_modes:
        out.append("--tests websocket with --connection-mode close: a WebSocket is one "
                   "connection held open for the whole window")
    return out


def case_title(case: dict) -> str:
    """A stored case's test as the tables name it ("websocket 32b", "static 64k")."""
    return title(case["test"], (case.get("key") or {}).get("size"))
