"""Load generation with oha 1.16 (https://github.com/hatoo/oha): the open model, and
the closed loop too.

wrk is a closed loop: each connection sends its next request only when the previous one
has been answered, so a slow server slows the client down and the requests it would have
sent during a stall are never sent, never timed (coordinated omission). oha with
`-q RATE --latency-correction` is an open model: a ticker schedules request i at
start + i / RATE, a free connection takes the next due request, and its latency is timed
from the moment it was due, so time spent waiting for a free connection is part of it.

oha without `-q` (settings.rate None) is the closed loop, as wrk: no rate limit, each of
the `-c` connections sends its next request when the last is answered, every latency
timed from its send. The same case can then be measured closed with wrk, oha and k6.
A rate of 0 is refused: oha reads `-q 0` as "no limit", so the closed loop is asked for
by None only, never by a zero.

Every run is the same argv shape (`oha_command`):

    oha --no-tui --output-format json -z <ms> -w -c <connections>
        [-q <rate> --latency-correction] -t <ms> --disable-compression
        -H "token: <token>" [--disable-keepalive] [--http-version 1.1 --cacert <CA>]
        [-m PATCH -T application/json -Z <bodies file>]
        --rand-regex-url <URL regex> --db-url <temp file>

oha's JSON report is parsed (`parse_oha_json`) into wrk's normalised summary (same keys,
same units), plus a `rate` block for the open model; its per-request dump adds the
histogram (oha_dump).

Public API::

    OhaSettings, OHA_VERSION, INSTALL_HINT
    require_oha(), oha_version()
    id_regex(), url_regex(test, base_url), update_bodies(seed, count)  (oha_requests)
    oha_command(test, base_url, settings, duration_s=None, *, bodies_file=None) -> list[str]
    classify_error(message) -> str
    parse_oha_json(text, *, asked_rate, duration_s, connections) -> dict  (asked_rate
        None: the closed loop, no rate block)
    run_oha(test, base_url, settings, duration_s=None, *, host=LOCAL, on_start=None) -> LoadResult
    reached(summary, tolerance=0.05) -> (bool, str)
"""
from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil

from bench.infra.host import LOCAL, Host
from bench.load import oha_dump
from bench.load.generator import LoadError, LoadRequest, LoadResult, check_window
# the request streams (URL regexes, PATCH bodies; bench.load.oha_requests), part of this
# module's API as before they moved there
from bench.load.oha_requests import id_regex, update_bodies, url_regex
from bench.load.wrk import LATENCY_KEYS

OHA_VERSION = "1.16.0"
INSTALL_HINT = (f"oha {OHA_VERSION} is not installed (or ~/.cargo/bin is not on PATH): run "
                f"`make setup` or scripts/install_oha.sh "
                f"(cargo install oha --version {OHA_VERSION} --locked)")
KILL_GRACE_S = 30.0       # run_oha gives oha duration + timeout + this much wall time
_TAIL_CHARS = 2000
# oha's text for a request cut off by the -z deadline (ClientError::Deadline)
DEADLINE_ERROR = "aborted due to deadline"
# oha's text for `-t` and for its 5 s connect timeout alike (ClientError::Timeout)
TIMEOUT_ERROR = "timeout"

# The closest wrk error kind for each oha 1.16 error text (lower-cased substrings, first
# match wins). oha reports std::io::Error texts ("Connection refused (os error 111)"),
# hyper 1.x error descriptions and its own ClientError texts. Anything else is "lost": a
# request that got no answer for a reason we do not know, counted, never dropped.
_ERROR_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("connect", ("connection refused", "os error 111", "cannot assign requested address",
                 "os error 99", "network is unreachable", "os error 101", "no route to host",
                 "os error 113", "too many open files", "os error 24",
                 "no record returned from dns", "failed to get port", "failed to get host")),
    ("write", ("broken pipe", "os error 32", "error writing a body to connection")),
    ("read", ("connection closed before message completed", "connection reset",
              "os error 104", "connection error", "error reading a body from connection",
              "unexpected end of file", "channel closed", "operation was canceled",
              "received unexpected message", "invalid http", "invalid content-length",
              "unexpected transfer-encoding", "message head is too large",
              "invalid status")),
)


@dataclass
class OhaSettings:
    connections: int
    # requests per second asked for (the open model's schedule); None: the closed loop
    rate: float | None
    duration_s: float
    timeout_s: float = 5.0
    seed: int = 1               # seeds the PATCH bodies; oha's own RNG cannot be seeded
    token: str = "hardcoded_token"
    # a new TCP connection for every request (--disable-keepalive, see oha_command)
    connection_close: bool = False
    # oha's tokio worker threads; None = oha's default (the physical cores)
    worker_threads: int | None = None
    n: int | None = None        # the database suite's rows per request
    size: str | None = None     # the static test's file (bench.core.workloads)
    headers: tuple[str, ...] = ()   # more request headers (-H): --compression's
    ca_file: str | None = None  # over https: the run's CA, which the certificate must chain to

    def __post_init__(self) -> None:
        if isinstance(self.connections, bool) or self.connections < 1:
            raise ValueError(f"connections must be >= 1, got {self.connections}")
        if self.rate is not None and not (isinstance(self.rate, (int, float))
                                          and not isinstance(self.rate, bool)
                                          and math.isfinite(self.rate) and self.rate > 0):
            # oha reads -q 0 as "no rate limit": that would silently be a closed loop,
            # which is asked for explicitly (rate None)
            raise ValueError(f"rate must be a finite number of req/s > 0 (None: the closed "
                             f"loop), got {self.rate!r}")
        check_window(self.duration_s, self.timeout_s, self.token)
        if self.worker_threads is not None and self.worker_threads < 1:
            raise ValueError(f"worker_threads must be >= 1, got {self.worker_threads}")

    @property
    def open_model(self) -> bool:
        return self.rate is not None

    @property
    def threads(self) -> int:
        """The worker threads oha runs: as asked, or its default, the physical cores."""
        return self.worker_threads or psutil.cpu_count(logical=False) or 1


# --------------------------------------------------------------------------- binary

def require_oha(host: Host = LOCAL) -> str:
    """Path of the oha binary, or LoadError with the install hint."""
    path = host.which("oha")
    if not path:
        raise LoadError(INSTALL_HINT)
    return path


def oha_version(host: Host = LOCAL) -> str:
    """`oha --version`, e.g. 'oha 1.16.0'."""
    done = host.run([require_oha(host), "--version"], timeout=10)
    line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    if done.returncode != 0 or not line.startswith("oha "):
        raise LoadError(f"cannot read oha's version from `oha --version`: "
                        f"{_tail(done.stdout + done.stderr)}")
    return line


def _ms(seconds: float) -> str:
    # humantime (oha's duration parser) takes whole milliseconds: "2500ms"
    return f"{max(1, round(seconds * 1000))}ms"


def _rate_arg(rate: float) -> str:
    # plain decimal as asked, readable in the stored command (":g" would round 1234567
    # to 1.23457e+06)
    return f"{rate:.6f}".rstrip("0").rstrip(".")


def oha_command(test: str, base_url: str, settings: OhaSettings,
                duration_s: float | None = None, *, bodies_file: Path | None = None) -> list[str]:
    """argv for one oha run (see the module docstring). `duration_s` defaults to
    settings.duration_s (pass e.g. a warm-up duration). "update user" needs `bodies_file`,
    one JSON body per line (update_bodies; run_oha writes it)."""
    duration = settings.duration_s if duration_s is None else duration_s
    if not duration > 0:
        raise ValueError(f"duration_s must be > 0, got {duration}")
    regex = url_regex(test, base_url, settings.n, settings.size)
    argv = [
        "oha",
        "--no-tui", "--output-format", "json",
        "-z", _ms(duration),
        # wait for the requests in flight at the deadline instead of aborting them: every
        # request sent then ends as a response, an error or a -t timeout. Without -w oha
        # reports every connection task it aborts as "aborted due to deadline", idle ones
        # included, so that count says nothing about requests.
        "-w",
        "-c", str(settings.connections),
        # the open model: request i due at start + i / rate, timed from when it was due.
        # Without -q oha is the closed loop (no rate limit: each connection sends its next
        # request when the last is answered), timed from each request's send.
        *(["-q", _rate_arg(settings.rate), "--latency-correction"] if settings.open_model
          else []),
        "-t", _ms(settings.timeout_s),
        # oha asks for gzip/br by default; the wrk scripts do not
        "--disable-compression",
        "-H", f"token: {settings.token}",
        *[arg for header in settings.headers for arg in ("-H", header)],
    ]
    if settings.worker_threads is not None:
        argv += ["--worker-threads", str(settings.worker_threads)]
    if settings.connection_close:
        # --disable-keepalive sends `Connection: close` AND drops the connection after each
        # response. `-H "Connection: close"` alone relies on the server: against a server
        # that answers without closing, oha kept its 8 connections for 200 requests, while
        # --disable-keepalive opened 200 (a counting http.server; both opened 200 against
        # one that honours the header).
        argv.append("--disable-keepalive")
    if base_url.startswith("https://"):
        # h1-tls: HTTP/1.1 only (oha offers no other by ALPN then), and the run's CA
        # trusted besides the system's store, so the certificate is verified
        argv += ["--http-version", "1.1"]
        if settings.ca_file:
            argv += ["--cacert", str(settings.ca_file)]
    if test == "update user":
        if bodies_file is None:
            raise ValueError("update user needs bodies_file: a file of update_bodies() lines")
        argv += ["-m", "PATCH", "-T", "application/json", "-Z", str(bodies_file)]
    argv += ["--rand-regex-url", regex]
    return argv


# --------------------------------------------------------------------------- parsing

def classify_error(message: str) -> str:
    """The wrk error kind (connect/read/write/timeout) closest to one oha error text;
    "deadline" for a request cut off by -z; "lost" for a text we do not know."""
    text = message.strip().lower()
    if text == DEADLINE_ERROR:
        return "deadline"
    if text == TIMEOUT_ERROR:
        return "timeout"
    for kind, needles in _ERROR_KINDS:
        if any(n in text for n in needles):
            return kind
    return "lost"


def _tail(text: str, limit: int = _TAIL_CHARS) -> str:
    text = (text or "").rstrip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _load_json(text: str) -> dict:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        # tolerate anything printed around the report (never seen with --no-tui)
        start, end = (text or "").find("{"), (text or "").rfind("}")
        try:
            data = json.loads(text[start:end + 1]) if 0 <= start < end else None
        except json.JSONDecodeError:
            data = None
    if not isinstance(data, dict):
        raise LoadError(f"oha printed no JSON report:\n{_tail(text)}")
    return data


def _number(value, what: str) -> float | None:
    """oha writes NaN/infinity (no successful request) as null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LoadError(f"oha JSON: {what} is not a number: {value!r}")
    return float(value)


def _count(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise LoadError(f"oha JSON: {what} is not a count: {value!r}")
    return value


def _ms_of(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def parse_oha_json(text: str, *, asked_rate: float | None, duration_s: float,
                   connections: int) -> dict:
    """wrk's normalised summary (bench.load.wrk.parse_wrk_output: same keys, same units)
    from oha's `--output-format json` report, plus `rate` for the open model (`asked_rate`
    None: the closed loop, which has no rate block).

    - requests: responses of any status (statusCodeDistribution), as wrk counts them.
    - sent: requests that went out on a connection: the responses plus every error
      except connection failures (their request never left) and "aborted due to deadline".
      unanswered = sent - requests.
    - duration_s: oha's `summary.total` (start to the last answer); requests_per_sec =
      requests / duration_s.
    - bytes: oha's totalData, which counts response BODY bytes only (wrk counts every byte
      read, headers included): same unit, smaller figure.
    - latency_ms: min/mean/max from summary fastest/average/slowest, p50..p99_9 from
      latencyPercentiles (oha sorts every latency and takes the floor(p/100 * n)-th),
      seconds -> ms; with --latency-correction (the open model) each is timed from the
      request's due time, in the closed loop from its send.
      Over every response, non-2xx included, as wrk. stdev is None: oha reports none.
      All None when there was no response.
    - errors: non-2xx responses are `status` (stricter than wrk, which flags > 399 only;
      the contract has no 3xx and oha follows no redirect); oha's errorDistribution by
      classify_error into connect/read/write/timeout; unknown texts are `lost`. A request
      cut off at the deadline (none with -w) is forgiven up to one per connection, like
      wrk's in-flight requests at its stop; more are `lost`. total = the sum of the six.
    - rate (open model only): asked (req/s); achieved = sent / the asked duration_s (the schedule's
      window: oha sends nothing after it, while its total also holds the wait for the
      last answers); not_sent = floor(asked * duration_s) - sent, never below 0: due
      requests oha never sent because no connection was free or oha could not keep up;
      late = None: oha's JSON has no per-request send time; run_oha fills it from oha's
      --db-url dump (bench.load.oha_dump, with the histogram). oha's ticker stamps a due
      request with the time it woke up, not start + i / RATE, so a ticker starved of CPU
      hides its own delay.
    """
    if not duration_s > 0 or not (asked_rate is None or asked_rate > 0):
        raise ValueError(f"asked_rate (None: the closed loop) and duration_s must be > 0, "
                         f"got {asked_rate}, {duration_s}")
    data = _load_json(text)
    try:
        summary = data["summary"]
        statuses = data["statusCodeDistribution"]
        error_texts = data["errorDistribution"]
        percentiles = data["latencyPercentiles"]
    except (KeyError, TypeError) as exc:
        raise LoadError(f"oha JSON lacks a field: {exc!r}; got keys {sorted(data)}") from None
    if not all(isinstance(x, dict) for x in (summary, statuses, error_texts, percentiles)):
        raise LoadError("oha JSON: summary, statusCodeDistribution, errorDistribution and "
                        "latencyPercentiles must be objects")

    requests = sum(_count(n, f"statusCodeDistribution[{code}]") for code, n in statuses.items())
    status_errors = sum(_count(n, f"statusCodeDistribution[{code}]")
                        for code, n in statuses.items() if not str(code).startswith("2"))
    kinds = {"connect": 0, "read": 0, "write": 0, "timeout": 0, "lost": 0, "deadline": 0}
    for message, n in error_texts.items():
        kinds[classify_error(message)] += _count(n, f"errorDistribution[{message!r}]")
    in_flight_at_stop = min(kinds["deadline"], connections)
    lost = kinds["lost"] + kinds["deadline"] - in_flight_at_stop
    errors = {"connect": kinds["connect"], "read": kinds["read"], "write": kinds["write"],
              "status": status_errors, "timeout": kinds["timeout"], "lost": lost}
    errors["total"] = sum(errors.values())
    sent = requests + kinds["read"] + kinds["write"] + kinds["timeout"] + lost

    total_s = _number(summary.get("total"), "summary.total") or 0.0
    raw = {"min": _number(summary.get("fastest"), "summary.fastest"),
           "mean": _number(summary.get("average"), "summary.average"),
           "stdev": None,
           "max": _number(summary.get("slowest"), "summary.slowest")}
    for key, name in (("p50", "p50"), ("p75", "p75"), ("p90", "p90"), ("p99", "p99"),
                      ("p99_9", "p99.9")):
        raw[key] = _number(percentiles.get(name), f"latencyPercentiles.{name}")
    latency_ms = {k: (_ms_of(raw[k]) if requests else None) for k in LATENCY_KEYS}

    out = {
        "requests": requests,
        "sent": sent,
        "unanswered": sent - requests,
        "duration_s": total_s,
        "requests_per_sec": requests / total_s if total_s > 0 else 0.0,
        "bytes": _count(summary.get("totalData", 0), "summary.totalData"),
        "latency_ms": latency_ms,
        "errors": errors,
    }
    if asked_rate is not None:
        scheduled = math.floor(asked_rate * duration_s + 1e-9)
        out["rate"] = {
            "asked": float(asked_rate),
            "achieved": sent / duration_s,
            "not_sent": max(0, scheduled - sent),
            "late": None,
        }
    return out


def reached(summary: dict, tolerance: float = 0.05) -> tuple[bool, str]:
    """Whether oha sent the asked rate: achieved >= (1 - tolerance) * asked. The string
    says why not (or confirms), for a figure that must not be stored as the server's."""
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")
    if "rate" not in summary:
        raise ValueError("a closed-loop summary has no rate to reach")
    rate = summary["rate"]
    asked, achieved = rate["asked"], rate["achieved"]
    floor_rps = (1 - tolerance) * asked
    if achieved >= floor_rps:
        return True, (f"asked {asked:,.0f} req/s, oha sent {achieved:,.0f} req/s "
                      f"(within {tolerance:.0%})")
    errors = summary["errors"]
    why = [f"{rate['not_sent']:,} due requests were never sent"]
    if errors["connect"]:
        why.append(f"{errors['connect']:,} connection attempts failed (their requests "
                   f"never left)")
    if summary["sent"]:
        # with -c N at most N requests are in flight: due requests wait for a free one
        why.append("every connection was busy (the server answers slower than "
                   "connections / rate) or oha itself could not keep up: look at the "
                   "latency and the client's CPU")
    return False, (f"asked {asked:,.0f} req/s, oha sent {achieved:,.0f} req/s "
                   f"({achieved / asked:.0%}, below {floor_rps:,.0f}): " + "; ".join(why))


# --------------------------------------------------------------------------- running

def run_oha(test: str, base_url: str, settings: OhaSettings,
            duration_s: float | None = None, *, host: Host = LOCAL,
            on_start: Callable[[int], None] | None = None,
            cpus: list[int] | None = None) -> LoadResult:
    """Run oha for one test, at settings.rate or the closed loop (rate None), and return
    its parsed summary and CPU usage.

    oha gets duration + timeout + 30 s of wall time (-w lets requests in flight at the
    deadline finish, each within the timeout); past that it is killed and LoadError
    raised, as it is when oha is missing, fails, or prints no JSON report. Errors in the
    run (connect, status, ...) are NOT an exception: look at summary["errors"], and at
    reached(summary) before storing a figure as the server's. `on_start` gets oha's pid.
    """
    oha = require_oha(host)
    duration = settings.duration_s if duration_s is None else duration_s
    with tempfile.TemporaryDirectory(prefix="bench-oha-") as tmp:
        bodies = None
        if test == "update user":
            bodies = Path(tmp) / "update_bodies.jsonl"
            bodies.write_text("\n".join(update_bodies(settings.seed)) + "\n")
            if getattr(host, "remote", False):   # that host reads it from its own disk
                remote = host.path(f"remote-tmp/{Path(tmp).name}-update_bodies.jsonl")
                host.put(bodies, remote)
                bodies = remote
        dump, local_dump = oha_dump.paths(host, Path(tmp))    # every response's times
        command = oha_command(test, base_url, settings, duration, bodies_file=bodies)
        argv = [oha] + command[1:] + ["--db-url", str(dump)]
        limit = duration + settings.timeout_s + KILL_GRACE_S
        done = host.run(argv, timeout=limit, on_start=on_start, cpus=cpus)
        distribution = oha_dump.collect(host, dump, local_dump)
    if done.timed_out:
        raise LoadError(f"oha did not finish within {limit:.0f} s and was killed: "
                        f"{' '.join(command)}\n--- stdout (tail) ---\n{_tail(done.stdout)}\n"
                        f"--- stderr (tail) ---\n{_tail(done.stderr)}")
    if done.returncode != 0:
        raise LoadError(f"oha exited with status {done.returncode}: {' '.join(command)}\n"
                        f"--- stderr (tail) ---\n{_tail(done.stderr)}")
    raw = _load_json(done.stdout)
    summary = parse_oha_json(done.stdout, asked_rate=settings.rate, duration_s=duration,
                             connections=settings.connections)
    oha_dump.add_distribution(summary, distribution)
    return LoadResult(command=argv, summary=summary, client_cpu_s=done.cpu_s,
                      wall_s=done.wall_s, exit_code=done.returncode,
                      stderr_tail=_tail(done.stderr), raw=raw, threads=settings.threads,
                      connections=settings.connections)


class Oha:
    """oha behind the Generator seam: both models, the open model (`-q RATE
    --latency-correction`) for a rate and the closed loop (no `-q`) without one."""
    name = "oha"
    open_model = True             # the model it runs when none is named: the open model
    models = frozenset({False, True})

    def version(self, host: Host = LOCAL) -> str:
        return oha_version(host)

    @staticmethod
    def settings(request: LoadRequest) -> OhaSettings:
        # a rate is the open model, None the closed loop (LoadRequest.open_model). As many
        # threads as wrk gets for these connections, in either model: oha's default (every
        # physical core) took CPU from the server and raised latency on a 2-core machine
        return OhaSettings(connections=request.connections, rate=request.rate,
                           duration_s=request.duration_s, timeout_s=request.timeout_s,
                           seed=request.seed, token=request.token,
                           connection_close=request.connection_close,
                           worker_threads=request.threads, n=request.n,
                           size=request.size, headers=tuple(request.headers),
                           ca_file=request.ca_file)

    def run(self, request: LoadRequest, *, host: Host = LOCAL,
            on_start: Callable[[int], None] | None = None,
            cpus: list[int] | None = None) -> LoadResult:
        return run_oha(request.test, request.base_url, self.settings(request),
                       request.duration_s, host=host, on_start=on_start, cpus=cpus)

    def describe(self, request: LoadRequest, result: LoadResult) -> dict:
        return {"rate": result.summary["rate"]} if request.open_model else {}

    def open_connections(self, connections: int, threads: int) -> int:
        return connections          # -c N opens N, whatever the worker threads or model


OHA = Oha()


__all__ = ["INSTALL_HINT", "OHA", "OHA_VERSION", "Oha", "OhaSettings", "classify_error",
           "id_regex", "oha_command", "oha_version", "parse_oha_json", "reached",
           "require_oha", "run_oha", "update_bodies", "url_regex"]
