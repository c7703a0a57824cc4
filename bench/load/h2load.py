"""h2load (nghttp2's HTTP/2 load generator) behind the Generator seam: the closed loop
over h2 (TLS, ALPN) or h2c (prior knowledge), with `-m` concurrent streams per
connection (`LoadRequest.streams`).

h2load cannot script a request, so each test's random parts (the contract's params and
user ids, as wrk_scripts/ draws them) are drawn here, for the seed, into an input file of
URIS_PER_FILE paths (`-i`), which each connection walks in order. A PATCH with a body per
request (update user) it cannot send: bench.core.protocols refuses that test over h2.

The latency distribution comes from its per-request `--log-file` (start µs, status,
µs to the end of the response), so h2 rows get the same merged histograms and
percentiles as wrk's; its text report gives the counts, and the application protocol each
connection negotiated, which must be the one asked for (`protocol_seen`): a silent
fall-back to HTTP/1.1 is an error of the sample, never a figure.
"""
from __future__ import annotations

import random
import re
import string
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

from bench.core import histogram, suite, workloads
from bench.core.protocols import TLS
from bench.infra.host import LOCAL
from bench.infra.seam import Host
from bench.load.generator import LoadError, LoadRequest, LoadResult, check_window
from bench.load.wrk import LATENCY_KEYS

URIS_PER_FILE = 1000
KILL_GRACE_S = 30
_TAIL_CHARS = 3000
_ALNUM = string.ascii_letters + string.digits
ID_MAX = 10_000

_FINISHED = re.compile(r"^finished in ([\d.]+)(us|ms|s),")
_REQUESTS = re.compile(r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                       r"(\d+) failed, (\d+) errored, (\d+) timeout")
_STATUS = re.compile(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx")
_TRAFFIC = re.compile(r"^traffic: .*?\((\d+)\) total")
_PROTOCOL = re.compile(r"^Application protocol: (\S+)")
_TLS = re.compile(r"^(TLS Protocol|Cipher): (\S+)")
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def paths(test: str, seed: int, n: int | None = None, count: int = URIS_PER_FILE,
          size: str | None = None) -> list[str]:
    """The request paths of one test, drawn as the wrk scripts draw them."""
    if test in suite.SUITE_TESTS:
        return [suite.path_for(test, n)]
    if test in (workloads.STATIC_TEST, workloads.DELAY_TEST):   # one URL each
        return [workloads.PATHS[test].format(size=size)]
    rng = random.Random(seed)
    if test == "get user":
        return [f"/user/{rng.randint(1, ID_MAX)}/" for _ in range(count)]
    if test in ("plain", "to json"):
        endpoint = "plain" if test == "plain" else "to_json"

        def alnum() -> str:
            return "".join(rng.choice(_ALNUM) for _ in range(rng.randint(4, 12)))
        return [f"/{endpoint}/?param1={alnum()}&param2={alnum()}&param3={alnum()}"
                for _ in range(count)]
    raise LoadError(f"h2load cannot send the test {test!r} (a PATCH or POST with a body "
                    f"per request, or a batch); over h2 the harness measures GET tests only")


def command(request: LoadRequest, uris_file: str, log_file: str) -> list[str]:
    """h2load's argv: -c connections over -t threads (no more threads than connections),
    -m streams per connection, -D seconds, the token header, the input file and the
    per-request log. -N, the request timeout as h2load has it (a connection silent that
    long is closed): without it h2load waits for an answer that never comes for ever, so a
    server that stops answering mid-window would cost the whole sample (killed) instead
    of counting its unanswered requests as errors, as wrk's --timeout does."""
    threads = max(1, min(request.threads, request.connections))
    return ["h2load", "-c", str(request.connections), "-t", str(threads),
            "-m", str(request.streams), "-D", f"{max(1, round(request.duration_s * 1000))}ms",
            "-N", f"{max(1, round(request.timeout_s * 1000))}ms",
            "-H", f"token: {request.token}",
            *[arg for header in request.headers for arg in ("-H", header)],
            "-i", uris_file, "--log-file", log_file]


def parse_report(text: str, *, connections: int, streams: int) -> dict:
    """wrk's normalised summary keys (bench.load.wrk.parse_wrk_output) from h2load's
    text report, latency left to the log (`add_log`), plus `negotiated`: the application
    protocols, TLS versions and ciphers its connections reported.

    - requests: responses of any status (the status-code counts), as wrk counts them;
      sent: requests started; unanswered = sent - requests.
    - errors: non-2xx responses are `status`; `errored` (a stream or connection reset)
      `read`; `timeout` as h2load counts it; requests started and never done beyond one
      per stream slot at the stop (connections x streams, in flight when the window
      closed, as wrk forgives its in-flight ones) are `lost`.
    """
    found: dict = {"protocols": set(), "tls_protocol": set(), "cipher": set()}
    finished = counts = statuses = None
    total_bytes = 0
    for line in text.splitlines():
        line = line.strip()
        if m := _FINISHED.match(line):
            finished = float(m.group(1)) * _UNITS[m.group(2)]
        elif m := _REQUESTS.match(line):
            counts = [int(g) for g in m.groups()]
        elif m := _STATUS.match(line):
            statuses = [int(g) for g in m.groups()]
        elif m := _TRAFFIC.match(line):
            total_bytes = int(m.group(1))
        elif m := _PROTOCOL.match(line):
            found["protocols"].add(m.group(1))
        elif m := _TLS.match(line):
            found["tls_protocol" if m.group(1) == "TLS Protocol" else "cipher"].add(m.group(2))
    if finished is None or counts is None or statuses is None:
        raise LoadError(f"h2load printed no report (finished / requests / status codes "
                        f"lines):\n{text[-_TAIL_CHARS:]}")
    _total, started, done, _ok, _failed, errored, timeout = counts
    responses = sum(statuses)
    in_flight = min(started - done, connections * streams)
    errors = {"connect": 0, "read": errored, "write": 0, "status": sum(statuses[1:]),
              "timeout": timeout, "lost": max(0, started - done - in_flight)}
    errors["total"] = sum(errors.values())
    return {"requests": responses, "sent": started, "unanswered": started - responses,
            "duration_s": finished,
            "requests_per_sec": responses / finished if finished > 0 else 0.0,
            "bytes": total_bytes, "latency_ms": {k: None for k in LATENCY_KEYS},
            "errors": errors,
            "negotiated": {k: sorted(v) for k, v in found.items()}}


def negotiation_problems(negotiated: dict, protocol: str) -> str:
    """What h2load's connections negotiated that the case did not ask for ("" if none):
    the application protocol, and over TLS the run's one version and cipher suite."""
    from bench.infra.certs import CIPHER_SUITE, TLS_VERSION
    want = {"h2": "h2", "h2c": "h2c"}.get(protocol)
    if want is None:
        return f"h2load runs HTTP/2 only, not {protocol}"
    out = []
    if negotiated["protocols"] != [want]:
        out.append(f"its connections negotiated {', '.join(negotiated['protocols']) or 'nothing'}"
                   f", not {want}")
    if protocol == "h2":
        for key, value in (("tls_protocol", TLS_VERSION), ("cipher", CIPHER_SUITE)):
            if negotiated[key] != [value]:
                out.append(f"{key.replace('_', ' ')} {', '.join(negotiated[key]) or 'none'}, "
                           f"not {value}")
    return "; ".join(out)


def read_log(path: Path) -> np.ndarray:
    """The per-request durations (µs) of h2load's --log-file."""
    if not path.is_file():
        raise LoadError(f"h2load wrote no log at {path}")
    rows = np.loadtxt(path, dtype=np.int64, ndmin=2, usecols=(2,)) if path.stat().st_size \
        else np.zeros((0, 1), dtype=np.int64)
    return rows[:, 0]


def add_log(summary: dict, durations_us: np.ndarray) -> None:
    """The histogram and the latency block from every logged response."""
    values, counts = np.unique(np.maximum(durations_us, 0), return_counts=True)
    hist, clamped = histogram.from_counts(zip(values.tolist(), counts.tolist()))
    summary["latency_histogram"] = histogram.to_record(hist, clamped)
    latency = histogram.percentiles_ms(hist)
    summary["latency_ms"] = {k: latency.get(k) for k in LATENCY_KEYS}
    if len(durations_us) != summary["requests"]:
        summary["latency_histogram_error"] = (
            f"h2load's log holds {len(durations_us)} responses, its report "
            f"{summary['requests']}: the histogram may miss some")


def h2load_version(host: Host = LOCAL) -> str:
    done = host.run(["h2load", "--version"], timeout=30)
    if done.returncode != 0:
        raise LoadError("h2load is not installed (Debian's nghttp2-client): `make setup` "
                        "installs it")
    return done.stdout.strip()


class H2load:
    """h2load behind the Generator seam: the closed loop only."""
    name = "h2load"
    open_model = False

    def version(self, host: Host = LOCAL) -> str:
        return h2load_version(host)

    def run(self, request: LoadRequest, *, host: Host = LOCAL,
            on_start: Callable[[int], None] | None = None,
            cpus: list[int] | None = None) -> LoadResult:
        check_window(request.duration_s, request.timeout_s, request.token)
        if host.remote:
            raise LoadError("h2load runs on this machine only for now (--protocol h2/h2c "
                            "with the client role on another host)")
        base = request.base_url.rstrip("/")
        with tempfile.TemporaryDirectory(prefix="bench-h2load-") as tmp:
            uris, log = Path(tmp) / "uris", Path(tmp) / "requests.log"
            uris.write_text("".join(f"{base}{p}\n"
                                    for p in paths(request.test, request.seed, request.n,
                                                   size=request.size)))
            argv = command(request, str(uris), str(log))
            limit = request.duration_s + request.timeout_s + KILL_GRACE_S
            done = host.run(argv, timeout=limit, on_start=on_start, cpus=cpus)
            if done.timed_out:
                raise LoadError(f"h2load did not finish within {limit:.0f} s and was killed: "
                                f"{' '.join(argv)}")
            if done.returncode != 0:
                raise LoadError(f"h2load exited with status {done.returncode}: "
                                f"{' '.join(argv)}\n{(done.stderr or done.stdout)[-_TAIL_CHARS:]}")
            summary = parse_report(done.stdout, connections=request.connections,
                                   streams=request.streams)
            if summary["requests"] == 0 and not summary["negotiated"]["protocols"]:
                raise LoadError(f"h2load: none of its {request.connections} connections "
                                f"was answered within the request timeout "
                                f"({request.timeout_s:g} s, -N): no "
                                f"{'TLS handshake' if request.protocol in TLS else 'HTTP/2 preface'}"
                                f" completed, no request was sent")
            wrong = negotiation_problems(summary["negotiated"], request.protocol)
            if wrong:
                raise LoadError(f"h2load: {wrong} (asked --protocol {request.protocol}): "
                                f"no figure over another protocol than the case's")
            add_log(summary, read_log(log))
        return LoadResult(command=argv, summary=summary, client_cpu_s=done.cpu_s,
                          wall_s=done.wall_s, exit_code=done.returncode,
                          stderr_tail=done.stderr[-_TAIL_CHARS:], raw={"report": done.stdout[-_TAIL_CHARS:]},
                          threads=max(1, min(request.threads, request.connections)),
                          connections=request.connections)

    def describe(self, request: LoadRequest, result: LoadResult) -> dict:
        return {"streams": request.streams, "negotiated": result.summary["negotiated"]}

    def open_connections(self, connections: int, threads: int) -> int:
        return connections


H2LOAD = H2load()
