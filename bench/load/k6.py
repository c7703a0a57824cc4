"""Load generation with k6 (Grafana k6 v1.x, a Go module built by scripts/install_k6.sh).

k6 runs both models, so it is the one generator that can measure the same case closed and
open with the same client:

- closed loop: the `constant-vus` executor, one VU per connection, each VU sending its
  next request when the last is answered (as a wrk connection); with `iterations` the
  `shared-iterations` executor instead (the seed report's `--vus 1000 --iterations
  100000`), the duration then being its maxDuration;
- open model (`rate`): the `constant-arrival-rate` executor, an iteration (one request)
  started every 1/RATE s. preAllocatedVUs = maxVUs = connections: at most `connections`
  requests in flight, the same cap as oha's `-c`. An iteration that is due while every VU
  is busy is not queued: k6 drops it and counts it in `dropped_iterations`, which the
  rate block reports as `dropped_iterations` and within `not_sent`. k6 times a request from
  when it was sent, and a sent request was sent when due, so `late` is 0 by construction:
  coordinated omission shows as dropped requests, not as latency.

One JavaScript script per test lives in ``k6_scripts/`` (plus the shared ``common.js``):
the same endpoints, ids, PATCH bodies, token header, n and Connection: close mode as
``wrk_scripts/``. Everything a run varies goes in as `-e NAME=value`; the script's
handleSummary prints one line, ``K6_JSON {...}`` (k6's summary data), which is all this
module parses. The `mixed` test (``mixed.js``) draws each request's endpoint by weight
from the run's mix (`K6Settings.mix`: bench.core.mix's script_arg) and tags the request
with the endpoint's key, so the summary has figures per endpoint (`endpoints`).

Every run is the same argv shape (`k6_command`):

    k6 run --quiet --no-color --no-usage-report --address "" --log-output stderr
        -e BENCH_BASE_URL=... -e BENCH_TOKEN=... -e BENCH_SEED=... -e BENCH_VUS=C
        -e BENCH_DURATION=S -e BENCH_TIMEOUT=S [-e BENCH_CLOSE=1] [-e BENCH_N=N]
        [-e BENCH_ITERATIONS=I | -e BENCH_RATE=R -e BENCH_TIME_UNIT=U -e BENCH_MAX_VUS=C]
        [-e BENCH_MIX=KEY:WEIGHT,...] k6_scripts/<test>.js

with GOMAXPROCS = the threads wrk would get (k6's default, every core, took CPU from the
server on 2 cores, as oha's did). BENCH_MIX is there when the run has a mix, which the
`mixed` test needs.

No latency histogram: k6's summary has its trend's percentiles only, and its whole
distribution needs a per-request output (`--out json`, one line per metric sample, tens
of bytes per request for every http_req_* metric). The summary keeps
`latency_histogram` None with `latency_histogram_error` saying so; the harness then
uses the percentiles, as for a wrk run whose counts could not be read.

Public API::

    K6Settings, K6_VERSION, INSTALL_HINT, SCRIPTS_DIR, TEST_SCRIPTS
    tool_path(host), require_k6(host), k6_version(host), mix_keys(mix)
    k6_command(test, base_url, settings, duration_s=None) -> list[str]
    parse_k6_output(stdout, stderr="", *, settings, duration_s) -> dict
    run_k6(test, base_url, settings, duration_s=None, *, host=LOCAL, ...) -> LoadResult
"""
from __future__ import annotations

import json
import math
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bench.core.mix import MIX_TEST
from bench.infra.host import LOCAL, Host
from bench.load.generator import LoadError, LoadRequest, LoadResult, check_window
from bench.core.workloads import HTTP_WORKLOADS, SIZE_BYTES, WEBSOCKET_TEST
from bench.load import k6_websocket
from bench.load.wrk import LATENCY_KEYS, TEST_SCRIPTS as WRK_TEST_SCRIPTS
from bench.paths import K6_SCRIPTS_DIR

K6_VERSION = "1.8.1"          # scripts/install_k6.sh and setup/packages.txt pin the same
K6_MINIMUM = (1, 0, 0)        # options and summary data this module relies on
SCRIPTS_DIR = K6_SCRIPTS_DIR
# wrk's tests, and `mixed` whether or not wrk has it yet
# every wrk test but the HTTP workloads (k6 sends a connection's requests one at a time,
# and has no scripts of the others yet: bench.core.workloads.GENERATORS)
TEST_SCRIPTS: dict[str, str] = {**{test: lua.replace(".lua", ".js")
                                   for test, lua in WRK_TEST_SCRIPTS.items()
                                   if test not in HTTP_WORKLOADS},
                                MIX_TEST: "mixed.js", WEBSOCKET_TEST: "websocket.js"}
TOOL_SUBDIR = "bin"           # scripts/install_k6.sh's GOBIN: <the harness's cache>/bin
INSTALL_HINT = (f"k6 {K6_VERSION} is not installed: run `make setup` or "
                f"scripts/install_k6.sh (go install go.k6.io/k6@v{K6_VERSION}, into "
                f"${{XDG_CACHE_HOME:-~/.cache}}/webbench/bin)")
JSON_MARKER = "K6_JSON "
KILL_GRACE_S = 30.0
ERROR_KINDS = ("connect", "read", "write", "timeout", "lost", "status")
_TAIL_CHARS = 2000
# k6's trend stats (k6_scripts/common.js summaryTrendStats) -> our latency keys
_TREND_KEYS = {"min": "min", "mean": "avg", "max": "max", "p50": "p(50)", "p75": "p(75)",
               "p90": "p(90)", "p99": "p(99)", "p99_9": "p(99.9)"}
NO_HISTOGRAM = ("k6 reports its latency percentiles only; its whole distribution would "
                "need a per-request output (--out json), which the harness does not take")


@dataclass
class K6Settings:
    connections: int                # VUs (closed loop) / pre-allocated = max VUs (open)
    duration_s: float
    timeout_s: float = 5.0
    seed: int = 1
    token: str = "hardcoded_token"
    connection_close: bool = False
    rate: float | None = None       # req/s: the open model
    iterations: int | None = None   # closed loop: this many requests shared among the VUs
    threads: int | None = None      # GOMAXPROCS; None = k6's default (every core)
    n: int | None = None
    ca_file: str | None = None      # over https: the run's CA, the one root it trusts
    mix: str | None = None          # the `mixed` test's endpoints: "get_user:60,queries.5:10"
    size: str | None = None         # the websocket test's message ("32b", "4k")

    def __post_init__(self) -> None:
        if isinstance(self.connections, bool) or self.connections < 1:
            raise ValueError(f"connections must be >= 1, got {self.connections}")
        check_window(self.duration_s, self.timeout_s, self.token)
        if self.rate is not None and not (isinstance(self.rate, (int, float))
                                          and math.isfinite(self.rate) and self.rate > 0):
            raise ValueError(f"rate must be a finite number of req/s > 0, got {self.rate!r}")
        if self.iterations is not None:
            if self.rate is not None:
                raise ValueError("iterations is the closed loop's; a rate has a duration")
            if self.iterations < 1:
                raise ValueError(f"iterations must be >= 1, got {self.iterations}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")
        if self.mix is not None:
            mix_keys(self.mix)


_MIX_ITEM = re.compile(r"([a-z_]+(?:\.[0-9]+)?):([0-9]+)")


def mix_keys(mix: str) -> list[str]:
    """The endpoint keys of a mix ("get_user:60,queries.5:10" -> get_user, queries.5), in
    its order; ValueError unless every item is KEY:WEIGHT with a weight >= 1 and no KEY
    is twice. Which tests a KEY may name is mixed.js's to say (it refuses the others)."""
    keys = []
    for item in mix.split(","):
        match = _MIX_ITEM.fullmatch(item)
        if match is None or int(match.group(2)) < 1:
            raise ValueError(f"mix item {item!r} is not KEY:WEIGHT (e.g. get_user:60, "
                             f"queries.5:10) with a weight >= 1: {mix!r}")
        if match.group(1) in keys:
            raise ValueError(f"mix lists {match.group(1)} twice: {mix!r}")
        keys.append(match.group(1))
    return keys


# --------------------------------------------------------------------------- binary

def tool_path(host: Host = LOCAL) -> str:
    """Where scripts/install_k6.sh puts k6 on `host`."""
    return posixpath.join(host.cache_dir(), TOOL_SUBDIR, "k6")


def _tail(text: str, limit: int = _TAIL_CHARS) -> str:
    text = (text or "").rstrip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _say_version(host: Host, path: str) -> str | None:
    try:
        done = host.run([path, "version"], timeout=10)
    except OSError:
        return None
    for line in done.stdout.splitlines():
        if line.startswith("k6 "):
            return line.strip()
    return None


def version_tuple(line: str) -> tuple[int, ...]:
    match = re.search(r"v?(\d+)\.(\d+)\.(\d+)", line)
    return tuple(int(x) for x in match.groups()) if match else ()


def require_k6(host: Host = LOCAL) -> tuple[str, str]:
    """(path, version line) of a k6 that is new enough: the set-up's (the harness's tool
    folder) first, else one on PATH. LoadError with the install hint otherwise."""
    candidates = [tool_path(host)]
    on_path = host.which("k6")
    if on_path and on_path not in candidates:
        candidates.append(on_path)
    seen = []
    for path in candidates:
        line = _say_version(host, path)
        if line is None:
            continue
        if version_tuple(line) >= K6_MINIMUM:
            return path, line
        seen.append(f"{path} is {line!r}, older than v{'.'.join(map(str, K6_MINIMUM))}")
    raise LoadError(INSTALL_HINT + ("; " + "; ".join(seen) if seen else ""))


def k6_version(host: Host = LOCAL) -> str:
    """`k6 version`'s line, e.g. 'k6 v1.8.1 (go1.26.8, linux/amd64)'."""
    return require_k6(host)[1]


# --------------------------------------------------------------------------- command

def script_for(test: str) -> Path:
    try:
        return SCRIPTS_DIR / TEST_SCRIPTS[test]
    except KeyError:
        raise ValueError(f"unknown test {test!r}; known: {', '.join(TEST_SCRIPTS)}") from None


def _seconds(value: float) -> str:
    # k6 durations take fractions ("2.5s"); keep the argv readable
    return f"{value:.3f}".rstrip("0").rstrip(".")


def rate_args(rate: float) -> tuple[int, int]:
    """(iterations, time unit in s) for constant-arrival-rate, whose rate is an integer
    per time unit: a whole rate per second, else per 1000 s (to 0.001 req/s)."""
    if abs(rate - round(rate)) < 1e-9:
        return int(round(rate)), 1
    return int(round(rate * 1000)), 1000


def k6_command(test: str, base_url: str, settings: K6Settings,
               duration_s: float | None = None) -> list[str]:
    """argv for one k6 run (see the module docstring)."""
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
    duration = settings.duration_s if duration_s is None else duration_s
    if not duration > 0:
        raise ValueError(f"duration_s must be > 0, got {duration}")
    if test == MIX_TEST and settings.mix is None:
        raise ValueError(f"the {MIX_TEST} test needs a mix (K6Settings.mix)")
    env = {"BENCH_BASE_URL": base_url.rstrip("/"), "BENCH_TOKEN": settings.token,
           "BENCH_SEED": str(int(settings.seed)), "BENCH_VUS": str(settings.connections),
           "BENCH_DURATION": _seconds(duration), "BENCH_TIMEOUT": _seconds(settings.timeout_s)}
    if settings.connection_close:
        env["BENCH_CLOSE"] = "1"
    if base_url.startswith("https://"):
        env["BENCH_TLS13"] = "1"        # the run's one TLS version (bench.infra.certs)
    if settings.n is not None:
        env["BENCH_N"] = str(int(settings.n))
    if settings.rate is not None:
        per, unit = rate_args(settings.rate)
        env.update(BENCH_RATE=str(per), BENCH_TIME_UNIT=str(unit),
                   BENCH_MAX_VUS=str(settings.connections))
    elif settings.iterations is not None:
        env["BENCH_ITERATIONS"] = str(settings.iterations)
    if settings.mix is not None:
        env["BENCH_MIX"] = settings.mix
    if test == WEBSOCKET_TEST:
        env["BENCH_SIZE"] = str(SIZE_BYTES[settings.size or "32b"])
    argv = ["k6", "run", "--quiet", "--no-color", "--no-usage-report", "--address", "",
            "--log-output", "stderr"]
    for name, value in env.items():
        argv += ["-e", f"{name}={value}"]
    return argv + [str(script_for(test))]


# --------------------------------------------------------------------------- parsing

def find_json(stdout: str, stderr: str = "") -> dict:
    line = None
    for candidate in (stdout or "").splitlines():
        if candidate.startswith(JSON_MARKER):
            line = candidate
    if line is None:
        raise LoadError("k6 printed no K6_JSON summary line (did the script fail, or k6 "
                        f"stop early?)\n--- stdout (tail) ---\n{_tail(stdout)}\n"
                        f"--- stderr (tail) ---\n{_tail(stderr)}")
    try:
        data = json.loads(line[len(JSON_MARKER):])
    except json.JSONDecodeError as exc:
        raise LoadError(f"malformed K6_JSON line ({exc}): {_tail(line, 500)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        raise LoadError(f"K6_JSON has no metrics object: {_tail(line, 500)}")
    return data


def _values(metrics: dict, name: str) -> dict:
    """A metric's values ({} when k6 never emitted it: a counter that stayed 0)."""
    metric = metrics.get(name)
    values = metric.get("values") if isinstance(metric, dict) else None
    return values if isinstance(values, dict) else {}


def _number(value, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LoadError(f"K6_JSON: {what} is not a number: {value!r}")
    return float(value)


def _count(metrics: dict, name: str) -> int:
    value = _number(_values(metrics, name).get("count", 0), f"{name}.count") or 0
    return int(round(value))


def _latency(metrics: dict, name: str, *, answered: bool) -> dict:
    """latency_ms (LATENCY_KEYS) from the trend `name`, all None unless `answered`."""
    trend = _values(metrics, name)
    latency_ms = {}
    for key in LATENCY_KEYS:
        stat = _TREND_KEYS.get(key)
        value = None if stat is None else _number(trend.get(stat), f"{name}.{stat}")
        latency_ms[key] = value if answered else None
    return latency_ms


def _endpoint(metrics: dict, key: str, *, answered: bool) -> dict:
    """One endpoint of a mix: its requests and latency, from the submetrics of its tag
    (absent when it got no request: sent 0, latency None)."""
    tag = f"{{endpoint:{key}}}"
    sent = _count(metrics, "http_reqs" + tag)
    return {"sent": sent,
            "latency_ms": _latency(metrics, "http_req_duration" + tag,
                                   answered=answered and sent > 0)}


def parse_k6_output(stdout: str, stderr: str = "", *, settings: K6Settings,
                    duration_s: float | None = None) -> dict:
    """wrk's normalised summary (same keys and units) from k6's K6_JSON line, plus `rate`
    for the open model and `iterations` when asked for.

    - sent: http_reqs (every request k6 made) less the connect errors (their request
      never left); requests: sent less the other unanswered ones (read, write, timeout,
      lost) = responses of any status, as wrk counts them. unanswered = sent - requests.
    - errors: common.js's counters by k6 error code (bench_error_<kind>): connect, read,
      write, timeout, lost (an error code we do not map); status: answers outside 2xx
      (as oha; k6 follows no redirect, maxRedirects 0). total = their sum. k6 waits for
      the requests in flight at the stop (gracefulStop = the timeout), so none is cut off.
    - duration_s: state.testRunDurationMs (the executor's window plus the wait for the
      last answers); requests_per_sec = requests / duration_s.
    - bytes: data_received (every byte read, headers included, as wrk).
    - latency_ms: http_req_duration (sending + waiting + receiving: from the request's
      first byte out to its last byte in; the connect time of a new connection is not in
      it, it is in http_req_connecting) over every request k6 timed; stdev None (k6 has
      none). All None without a response.
    - latency_histogram None, with latency_histogram_error (see the module docstring).
    - endpoints (a run with a mix only): for each KEY of the mix, {"sent": http_reqs
      tagged endpoint:KEY, "latency_ms": latency_ms's keys from http_req_duration tagged
      so}; mixed.js's thresholds put those submetrics in the summary. An endpoint the
      summary lacks has sent 0; latency_ms is all None for an endpoint without requests
      and, as the run's, in a run without a response.
    - rate (open model): asked, achieved = sent / the asked window; dropped_iterations:
      k6's count of due iterations no VU was free to start; not_sent: the due requests
      never sent, the larger of that and floor(asked * window) - the requests k6 made
      (k6's own count falls short when k6 itself cannot keep up: its ticker lags too, as
      the unreachable-rate fixture shows); late = 0 (k6 sends a request when due or
      drops it).
    """
    data = find_json(stdout, stderr)
    metrics = data["metrics"]
    if k6_websocket.is_websocket(metrics):
        state = data.get("state") if isinstance(data.get("state"), dict) else {}
        run_ms = _number(state.get("testRunDurationMs"), "state.testRunDurationMs") or 0.0
        return k6_websocket.summary(metrics, run_ms / 1000.0, _count, _latency)
    if "http_reqs" not in metrics and "iterations" not in metrics:
        raise LoadError(f"K6_JSON lacks http_reqs and iterations: got {sorted(metrics)}")
    made = _count(metrics, "http_reqs")
    kinds = {k: _count(metrics, f"bench_error_{k}") for k in ERROR_KINDS}
    sent = max(0, made - kinds["connect"])
    unanswered = min(sent, kinds["read"] + kinds["write"] + kinds["timeout"] + kinds["lost"])
    requests = sent - unanswered
    errors = {k: kinds[k] for k in ("connect", "read", "write", "status", "timeout", "lost")}
    errors["total"] = sum(errors.values())

    state = data.get("state") if isinstance(data.get("state"), dict) else {}
    run_ms = _number(state.get("testRunDurationMs"), "state.testRunDurationMs") or 0.0
    total_s = run_ms / 1000.0
    out = {
        "requests": requests,
        "sent": sent,
        "unanswered": unanswered,
        "duration_s": total_s,
        "requests_per_sec": requests / total_s if total_s > 0 else 0.0,
        "bytes": _count(metrics, "data_received"),
        "latency_ms": _latency(metrics, "http_req_duration", answered=requests > 0),
        "errors": errors,
        "latency_histogram": None,
        "latency_histogram_error": NO_HISTOGRAM,
    }
    if settings.mix is not None:
        out["endpoints"] = {key: _endpoint(metrics, key, answered=requests > 0)
                            for key in mix_keys(settings.mix)}
    if settings.iterations is not None:
        out["iterations"] = {"asked": settings.iterations,
                             "completed": _count(metrics, "iterations")}
    if settings.rate is not None:
        window = settings.duration_s if duration_s is None else duration_s
        dropped = _count(metrics, "dropped_iterations")
        scheduled = math.floor(settings.rate * window + 1e-9)
        out["rate"] = {"asked": float(settings.rate), "achieved": sent / window,
                       "not_sent": max(dropped, scheduled - made),
                       "dropped_iterations": dropped, "late": 0}
    return out


# --------------------------------------------------------------------------- running

def run_k6(test: str, base_url: str, settings: K6Settings, duration_s: float | None = None,
           *, host: Host = LOCAL, on_start: Callable[[int], None] | None = None,
           cpus: list[int] | None = None) -> LoadResult:
    """Run k6 for one test and return its parsed summary and client CPU (wait4 rusage).

    k6 gets duration + timeout + 30 s of wall time; past that it is killed and LoadError
    raised, as it is when k6 is missing or too old or prints no K6_JSON line. Errors of
    the server are figures in summary["errors"], not exceptions."""
    k6, _ = require_k6(host)
    duration = settings.duration_s if duration_s is None else duration_s
    command = k6_command(test, base_url, settings, duration)
    argv = [k6] + [host.project_path(a) if a == str(script_for(test)) else a
                   for a in command[1:]]
    env = host.base_environment()
    env["K6_NO_USAGE_REPORT"] = "true"
    # HTTP/1.1 only: Go's client would offer h2 by ALPN and take it from a proxy that
    # speaks both (k6 has no option for it); every answer's protocol is checked besides
    env["GODEBUG"] = "http2client=0"
    if settings.ca_file:
        # Go reads the system's roots from this file on Linux: the run's CA is the only
        # one trusted, so the certificate is verified, never skipped
        env["SSL_CERT_FILE"] = str(settings.ca_file)        # a path on the client's host
    if settings.threads is not None:
        env["GOMAXPROCS"] = str(settings.threads)
    limit = duration + settings.timeout_s + KILL_GRACE_S
    done = host.run(argv, timeout=limit, env=env, on_start=on_start, cpus=cpus)
    if done.timed_out:
        raise LoadError(f"k6 did not finish within {limit:.0f} s and was killed: "
                        f"{' '.join(command)}\n--- stderr (tail) ---\n{_tail(done.stderr)}")
    try:
        raw = find_json(done.stdout, done.stderr)
    except LoadError as exc:
        raise LoadError(f"k6 exited with status {done.returncode}: {' '.join(command)}\n"
                        f"{exc}") from None
    summary = parse_k6_output(done.stdout, done.stderr, settings=settings,
                              duration_s=duration)
    problem = protocol_problem(raw)
    if problem:
        raise LoadError(f"{problem}: {' '.join(command)}")
    return LoadResult(command=argv, summary=summary, client_cpu_s=done.cpu_s,
                      wall_s=done.wall_s, exit_code=done.returncode,
                      stderr_tail=_tail(done.stderr), raw=_compact(raw),
                      threads=settings.threads or 0, connections=settings.connections)


def protocol_problem(raw: dict) -> str | None:
    """Answers that came over another protocol than HTTP/1.1 (the script counts them): an
    error of the sample, never a silent fall-back; None when there were none."""
    other = _count(raw.get("metrics") or {}, "bench_other_protocol")
    return f"k6: {other} of its answers came over another protocol than HTTP/1.1" \
        if other else None


def _compact(raw: dict) -> dict:
    """k6's summary data as stored: its metrics' values and the run's state (the options
    and the root group's checks are the script's, not figures)."""
    return {"metrics": {name: m.get("values") for name, m in raw["metrics"].items()
                        if isinstance(m, dict)},
            "state": raw.get("state")}


class K6:
    """k6 behind the Generator seam: both models (constant-vus / constant-arrival-rate)."""
    name = "k6"
    open_model = False            # the model it runs when none is named: the closed loop
    models = frozenset({False, True})

    def version(self, host: Host = LOCAL) -> str:
        return k6_version(host)

    @staticmethod
    def settings(request: LoadRequest) -> K6Settings:
        return K6Settings(connections=request.connections, duration_s=request.duration_s,
                          timeout_s=request.timeout_s, seed=request.seed,
                          token=request.token, connection_close=request.connection_close,
                          rate=request.rate, threads=request.threads, n=request.n,
                          iterations=None if request.open_model else request.iterations,
                          ca_file=request.ca_file, mix=request.mix, size=request.size)

    def run(self, request: LoadRequest, *, host: Host = LOCAL,
            on_start: Callable[[int], None] | None = None,
            cpus: list[int] | None = None) -> LoadResult:
        return run_k6(request.test, request.base_url, self.settings(request),
                      request.duration_s, host=host, on_start=on_start, cpus=cpus)

    def describe(self, request: LoadRequest, result: LoadResult) -> dict:
        return {"rate": result.summary["rate"]} if request.open_model else {}

    def open_connections(self, connections: int, threads: int) -> int:
        return connections          # one VU per connection, each with its own


K6_GENERATOR = K6()
