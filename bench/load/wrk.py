"""Load generation with wrk (4.x, LuaJIT).

One Lua script per test lives in ``wrk_scripts/`` (plus the shared
``common.lua``). The scripts never define ``response()`` (that would make wrk
hand every response to Lua and slow the client down); each wrk thread
pre-formats a pool of requests in ``init()`` and ``request()`` just returns
them in turn. The shared ``done()`` prints exactly one machine-readable line,
``WRK_JSON {...}``, which is all this module parses -- wrk's human-readable
report is never parsed.

Public API::

    LoadSettings, LoadResult, LoadError
    TEST_SCRIPTS, SCRIPTS_DIR, script_for(test)
    require_wrk(), wrk_version()
    wrk_command(test, base_url, settings, duration_s=None) -> list[str]
    parse_wrk_output(stdout, stderr="") -> dict
    latency_histogram(counts) -> (record | None, why | None)
    run_wrk(test, base_url, settings, duration_s=None) -> LoadResult
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from bench.core import histogram
from bench.infra.host import LOCAL, Host
from bench.load.generator import LoadError, LoadRequest, LoadResult, check_window
from bench.paths import WRK_SCRIPTS_DIR

SCRIPTS_DIR = WRK_SCRIPTS_DIR

# test name (as in the contract and the result tables) -> Lua script
TEST_SCRIPTS: dict[str, str] = {
    "get user": "get_user.lua",
    "update user": "update_user.lua",
    "plain": "plain.lua",
    "to json": "to_json.lua",
    # the database suite's: the server draws the ids, so every request is the same
    "queries": "queries.lua",
    "updates": "updates.lua",
    "fortunes": "fortunes.lua",
    "cached": "cached.lua",
    # endpoints drawn by weight from a profile (bench.core.mix), each built as above
    "mixed": "mixed.lua",
    # plain's requests, `pipeline` of them written at once (bench.core.pipelining)
    "pipelined": "pipelined.lua",
    # the HTTP workloads (bench.core.workloads): a file, a body (size=S), a wait
    "static": "static.lua",
    "upload": "upload.lua",
    "delay": "delay.lua",
}

JSON_MARKER = "WRK_JSON "
INSTALL_HINT = ("wrk is not installed (or not on PATH): install it with "
                "`sudo apt-get install wrk` (Debian/Ubuntu) or `brew install wrk` (macOS)")
LATENCY_KEYS = ("min", "mean", "stdev", "max", "p50", "p75", "p90", "p99", "p99_9")
ERROR_KEYS = ("connect", "read", "write", "status", "timeout")
WRK_VERIFY_CALLS = 1  # request() calls wrk makes before the run, which send nothing
KILL_GRACE_S = 30.0   # run_wrk gives wrk duration + this much wall time
_TAIL_CHARS = 2000


@dataclass
class LoadSettings:
    threads: int
    connections: int
    duration_s: float
    timeout_s: float = 5.0
    seed: int = 1
    token: str = "hardcoded_token"
    # `Connection: close` on every request: wrk then opens a new TCP connection for each
    # (it reconnects whenever a response does not allow keep-alive)
    connection_close: bool = False
    n: int | None = None      # the database suite's rows per request, for its scripts
    mix: str | None = None    # the mixed test's weights (bench.core.mix.Mix.script_arg)
    pipeline: int = 1         # requests per write on each connection (pipelined.lua)
    size: str | None = None   # the static test's file, the upload test's body (size=S)
    headers: tuple[str, ...] = ()   # more request headers (-H): --compression's

    def __post_init__(self) -> None:
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")
        if self.connections < self.threads:
            # wrk itself refuses this ("number of connections must be >= threads")
            raise ValueError(f"connections ({self.connections}) must be >= threads ({self.threads})")
        check_window(self.duration_s, self.timeout_s, self.token)
        if self.mix is not None and not self.mix.strip():
            raise ValueError("mix must name at least one endpoint")
        if type(self.pipeline) is not int or self.pipeline < 1:
            raise ValueError(f"pipeline must be a whole number >= 1, got {self.pipeline!r}")

    @property
    def open_connections(self) -> int:
        """What wrk really opens: each thread gets connections // threads."""
        return self.threads * (self.connections // self.threads)


def script_for(test: str) -> Path:
    """Absolute path of the wrk script for a contract test name (e.g. "get user")."""
    try:
        name = TEST_SCRIPTS[test]
    except KeyError:
        raise ValueError(f"unknown test {test!r}; known: {', '.join(TEST_SCRIPTS)}") from None
    return SCRIPTS_DIR / name


def require_wrk(host: Host = LOCAL) -> str:
    """Path of the wrk binary, or LoadError with an install hint."""
    path = host.which("wrk")
    if not path:
        raise LoadError(INSTALL_HINT)
    return path


def wrk_version(host: Host = LOCAL) -> str:
    """First line of `wrk -v`, e.g. 'wrk debian/4.1.0-3+b2 [epoll] Copyright (C) 2012 Will Glozer'."""
    wrk = require_wrk(host)
    # `wrk -v` prints the version and usage and exits with status 1
    proc = host.run([wrk, "-v"], timeout=10)
    for line in (proc.stdout + "\n" + proc.stderr).splitlines():
        if line.strip().startswith("wrk "):
            return line.strip()
    raise LoadError(f"cannot read wrk version from `wrk -v`: {_tail(proc.stdout + proc.stderr)}")


def _whole_seconds(value: float) -> int:
    # wrk only accepts whole seconds for -d and --timeout ("1.5s" is a usage error)
    return max(1, math.ceil(value - 1e-9))


def wrk_command(test: str, base_url: str, settings: LoadSettings,
                duration_s: float | None = None) -> list[str]:
    """argv for one wrk run: wrk -t -c -d --timeout --latency -s <script> <url> -- <token>
    <seed> [n=N] [mix=M].

    `duration_s` defaults to settings.duration_s (pass e.g. a warm-up duration);
    durations and the timeout are rounded up to whole seconds, as wrk requires.
    """
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
    duration = settings.duration_s if duration_s is None else duration_s
    if test == "mixed" and settings.mix is None:
        raise ValueError("the mixed test needs a mix (LoadSettings.mix)")
    if (test == "pipelined") != (settings.pipeline > 1):
        raise ValueError(f"the pipelined test and only it pipelines: test {test!r} with "
                         f"pipeline {settings.pipeline}")
    if not duration > 0:
        raise ValueError(f"duration_s must be > 0, got {duration}")
    return [
        "wrk",
        "-t", str(settings.threads),
        "-c", str(settings.connections),
        "-d", f"{_whole_seconds(duration)}s",
        "--timeout", f"{_whole_seconds(settings.timeout_s)}s",
        "--latency",
        *(["-H", "Connection: close"] if settings.connection_close else []),
        *[arg for header in settings.headers for arg in ("-H", header)],
        "-s", str(script_for(test)),
        base_url.rstrip("/"),
        "--", settings.token, str(int(settings.seed)),
        *([] if settings.n is None else [f"n={int(settings.n)}"]),
        *([] if settings.mix is None else [f"mix={settings.mix}"]),
        *([] if settings.pipeline == 1 else [f"pipeline={settings.pipeline}"]),
        *([] if settings.size is None else [f"size={settings.size}"]),
    ]


def _tail(text: str, limit: int = _TAIL_CHARS) -> str:
    text = (text or "").rstrip()
    return text if len(text) <= limit else "..." + text[-limit:]


def _num(value, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LoadError(f"WRK_JSON: {what} is not a number: {value!r}")
    return value


def _find_json(stdout: str, stderr: str = "") -> dict:
    line = None
    for candidate in (stdout or "").splitlines():
        if candidate.startswith(JSON_MARKER):
            line = candidate  # the last one wins
    if line is None:
        raise LoadError(
            "wrk printed no WRK_JSON summary line (did the Lua script fail, or did wrk "
            "exit early, e.g. 'unable to connect'?)\n"
            f"--- stdout (tail) ---\n{_tail(stdout)}\n--- stderr (tail) ---\n{_tail(stderr)}")
    try:
        data = json.loads(line[len(JSON_MARKER):])
    except json.JSONDecodeError as exc:
        raise LoadError(f"malformed WRK_JSON line ({exc}): {_tail(line, 500)}") from None
    if not isinstance(data, dict):
        raise LoadError(f"WRK_JSON is not an object: {_tail(line, 500)}")
    return data


def _sent(data: dict, pipeline: int = 1) -> int | None:
    """Requests the Lua scripts handed to wrk, summed over threads (None: not reported).

    Before the run wrk calls request() once on its first thread's script to check what it
    returns (script_verify_request in wrk.c, which also counts the requests in it: the
    pipeline's depth); that batch is never sent, so it is not counted."""
    threads = data.get("threads")
    if not isinstance(threads, list) or not threads:
        return None
    counted = sum(int(_num(t.get("sent", 0), "threads[].sent") or 0) for t in threads)
    return max(0, counted - WRK_VERIFY_CALLS * pipeline)


def request_accounting(sent: int | None, completed: int, errors: dict,
                       connections: int | None, in_flight: int = 1) -> dict:
    """Requests that never got an answer, counted as errors.

    wrk's `requests` counts responses only (including non-2xx and late ones, which its
    `status` and `timeout` counters flag), so a request whose connection the server
    closed, or that was never answered, is in no counter. The Lua scripts count every
    request handed to wrk; `sent - completed` is what got no answer. At the stop each
    connection may still have one request in flight (`in_flight` of them: a batch of the
    pipeline's depth for the pipelined test), so up to `connections` x `in_flight` of
    those are not the server's fault; the rest are `lost`. Read and
    write errors are such unanswered requests already, so they and `lost` overlap: the
    larger of the two is counted, never both. Without the connection count nothing can be
    told lost.
    """
    unanswered = None if sent is None else max(0, sent - completed)
    lost = 0 if unanswered is None or connections is None else max(0, unanswered - connections * in_flight)
    total = (errors["connect"] + errors["status"] + errors["timeout"]
             + max(errors["read"] + errors["write"], lost))
    return {"unanswered": unanswered, "lost": lost, "errors": total}


def _decode_counts(text: str):
    """(value µs, count) pairs of common.lua's "delta:count,..." (each value the step
    from the previous one, the first from 0)."""
    value = 0
    for part in text.split(","):
        delta, _, count = part.partition(":")
        value += int(delta)
        yield value, int(count)


def latency_histogram(counts) -> tuple[dict | None, str | None]:
    """The stored histogram (bench.core.histogram) of the WRK_JSON `latency_counts`, or
    (None, why) when wrk gave none: the sample keeps every other figure."""
    if not isinstance(counts, dict):
        return None, "wrk printed no latency counts (a wrk script without latency_counts)"
    if counts.get("error"):
        return None, f"wrk's latency counts could not be read: {counts['error']}"
    text = counts.get("counts")
    if not isinstance(text, str):
        return None, f"wrk's latency counts are not a string: {text!r:.80}"
    try:
        hist, clamped = histogram.from_counts(_decode_counts(text) if text else ())
    except (ValueError, TypeError) as exc:
        return None, f"wrk's latency counts are malformed: {exc}"
    return histogram.to_record(hist, clamped), None


def _normalise(data: dict, connections: int | None = None, pipeline: int = 1) -> dict:
    try:
        requests = int(_num(data["requests"], "requests"))
        duration_us = _num(data["duration_us"], "duration_us")
        nbytes = int(_num(data["bytes"], "bytes"))
        raw_errors = data["errors"]
        raw_latency = data["latency_us"]
    except (KeyError, TypeError) as exc:
        raise LoadError(f"WRK_JSON lacks a field: {exc!r}; got keys {sorted(data)}") from None
    duration_s = (duration_us or 0) / 1e6
    errors = {k: int(_num(raw_errors.get(k, 0), f"errors.{k}") or 0) for k in ERROR_KEYS}
    sent = _sent(data, pipeline)
    accounting = request_accounting(sent, requests, errors, connections, pipeline)
    errors["lost"] = accounting["lost"]
    errors["total"] = accounting["errors"]
    latency_ms = {}
    for k in LATENCY_KEYS:
        v = _num(raw_latency.get(k), f"latency_us.{k}")
        latency_ms[k] = None if (v is None or requests == 0) else v / 1000.0
    hist, why = latency_histogram(data.get("latency_counts"))
    endpoints = _endpoints(data.get("endpoints"))
    out = {
        "requests": requests,
        "sent": sent,
        "unanswered": accounting["unanswered"],
        "duration_s": duration_s,
        "requests_per_sec": requests / duration_s if duration_s > 0 else 0.0,
        "bytes": nbytes,
        "latency_ms": latency_ms,
        "errors": errors,
        # wrk's whole distribution, as corrected by wrk (its latency_ms come from it too)
        "latency_histogram": hist,
    }
    if why:
        out["latency_histogram_error"] = why
    if endpoints is not None:
        out["endpoints"] = endpoints
    return out


def _endpoints(counts) -> dict | None:
    """{key: {"sent": requests handed to wrk}} of a script whose builder names its
    endpoint (mixed.lua); None for the others. wrk cannot time a request by endpoint (its
    Lua sees no response without response(), which would cost the client a Lua call per
    answer, and no clock), so each endpoint's latency is left to k6. The count includes
    the one request wrk builds to check the script and never sends (WRK_VERIFY_CALLS)."""
    if counts is None:
        return None
    if not isinstance(counts, dict):
        raise LoadError(f"WRK_JSON's endpoints is not a map: {counts!r:.80}")
    return {str(key): {"sent": int(_num(count, f"endpoints.{key}") or 0)}
            for key, count in sorted(counts.items())}


def parse_wrk_output(stdout: str, stderr: str = "", connections: int | None = None) -> dict:
    """The normalised summary from wrk's stdout (only the `WRK_JSON {...}` line is read).

    Returns {"requests", "duration_s", "requests_per_sec", "bytes",
             "latency_ms": {min, mean, stdev, max, p50, p75, p90, p99, p99_9} (None if no requests),
             "errors": {connect, read, write, status, timeout, total},
             "latency_histogram": the stored histogram or None,
             "latency_histogram_error": why it is None (only then)}.
    Raises LoadError (with the tails of stdout/stderr) when there is no such line.
    """
    return _normalise(_find_json(stdout, stderr), connections)


def run_wrk(test: str, base_url: str, settings: LoadSettings,
            duration_s: float | None = None, *, host: Host = LOCAL,
            on_start: Callable[[int], None] | None = None,
            cpus: list[int] | None = None) -> LoadResult:
    """Run wrk for one test and return its parsed summary and client CPU usage.

    Raises LoadError if wrk is missing, exceeds duration + 30 s, or prints no WRK_JSON
    line (e.g. "unable to connect" when nothing listens at base_url). A run that has
    errors (connect/status/lost...) is NOT an exception: look at summary["errors"].
    On KeyboardInterrupt wrk is killed and the interrupt re-raised. `on_start` gets
    wrk's pid (the resource sampler watches it); `cpus` pins it (--client-cpus).
    """
    wrk = require_wrk(host)
    command = wrk_command(test, base_url, settings, duration_s)
    # the Lua scripts where the project is on the load generator's host
    argv = [wrk] + [host.project_path(a) if a == str(script_for(test)) else a
                    for a in command[1:]]
    duration = _whole_seconds(settings.duration_s if duration_s is None else duration_s)
    # SIGINT makes wrk stop early and still print its report
    done = host.run(argv, timeout=duration + KILL_GRACE_S, on_start=on_start, cpus=cpus)
    if done.timed_out:
        raise LoadError(
            f"wrk did not finish within {duration + KILL_GRACE_S:.0f} s and was killed: "
            f"{' '.join(command)}\n--- stdout (tail) ---\n{_tail(done.stdout)}\n"
            f"--- stderr (tail) ---\n{_tail(done.stderr)}")
    try:
        data = _find_json(done.stdout, done.stderr)
    except LoadError as exc:
        raise LoadError(f"wrk exited with status {done.returncode}: {' '.join(command)}\n"
                        f"{exc}") from None
    return LoadResult(command=argv, summary=_normalise(data, settings.open_connections,
                                                      settings.pipeline),
                      client_cpu_s=done.cpu_s, wall_s=done.wall_s, exit_code=done.returncode,
                      stderr_tail=_tail(done.stderr), raw=data, threads=settings.threads,
                      connections=settings.open_connections)


class Wrk:
    """wrk behind the Generator seam: the closed loop."""
    name = "wrk"
    open_model = False
    pipelines = True          # its Lua request() may return a batch (bench.core.pipelining)

    def version(self, host: Host = LOCAL) -> str:
        return wrk_version(host)

    @staticmethod
    def settings(request: LoadRequest) -> LoadSettings:
        return LoadSettings(threads=request.threads, connections=request.connections,
                            duration_s=request.duration_s, timeout_s=request.timeout_s,
                            seed=request.seed, token=request.token,
                            connection_close=request.connection_close, n=request.n,
                            mix=request.mix, pipeline=request.pipeline, size=request.size,
                            headers=tuple(request.headers))

    def run(self, request: LoadRequest, *, host: Host = LOCAL,
            on_start: Callable[[int], None] | None = None,
            cpus: list[int] | None = None) -> LoadResult:
        if request.open_model:
            raise LoadError("wrk runs the closed loop only; a rate needs an open-model "
                            "generator")
        return run_wrk(request.test, request.base_url, self.settings(request),
                       request.duration_s, host=host, on_start=on_start, cpus=cpus)

    def describe(self, request: LoadRequest, result: LoadResult) -> dict:
        return {"pipeline": request.pipeline} if request.pipeline > 1 else {}

    def open_connections(self, connections: int, threads: int) -> int:
        return LoadSettings(threads=threads, connections=connections,
                            duration_s=1).open_connections


WRK = Wrk()
