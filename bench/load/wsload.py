"""Load generation for the `websocket` test with wsload, the harness's own compiled
WebSocket client (tools/wsload: Go, gorilla/websocket), behind the Generator seam.

Why a client of our own: k6's WebSocket module (k6/websockets) was the first choice, and
it spent more CPU per echoed message than a Python server did answering it (measured on
this project's 2-core VM: k6 about 90 µs per message, the websockets 17 echo server
about 85 µs, wsload about 50 µs, most of it the loopback TCP stack's), and it times
round trips in whole milliseconds only (k6's JavaScript has no clock finer than Date.now).
wsload times each round trip in microseconds and hands every one to the harness's HDR
histogram, like h2load's log.

The closed loop, as a wrk connection: each connection has one message in flight; a
"request" of the summary is one message's round trip (sent, echoed, checked byte for
byte). The summary has wrk's normalised keys:

- sent: messages written; requests: echoes received (of any content, as wrk counts a
  response of any status); unanswered = sent - requests.
- errors: connect (a failed handshake, the connection retried after 10 ms), write, read
  (the connection closed or broke while an echo was awaited), timeout (no echo within the
  timeout), status (an echo that is not the message sent, or not a text message). A
  connection that failed is closed and opened again.
- bytes: the echoed frames as they came on the wire (payload and frame header).
- latency: each round trip, from the message's write to its echo's last byte.

The binary is built from tools/wsload with the Go toolchain (`go build -mod=readonly`
from its go.sum) on first use, into the harness's tool folder, under a name that carries
a hash of its sources: a change of them builds a new one.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path
from typing import Callable

from bench.core import histogram, workloads
from bench.infra.host import LOCAL, Host
from bench.load.generator import LoadError, LoadRequest, LoadResult, check_window
from bench.load.wrk import LATENCY_KEYS
from bench.paths import REPO

SOURCE_DIR = REPO / "tools" / "wsload"
SOURCES = ("main.go", "go.mod", "go.sum")
LIBRARY = "gorilla/websocket v1.5.3"          # tools/wsload/go.mod pins the same
GO_FALLBACK = "/usr/local/go/bin/go"          # the Go tarball's place (see the Makefile)
BUILD_TIMEOUT_S = 600
KILL_GRACE_S = 30.0
ERROR_KINDS = ("connect", "read", "write", "status", "timeout")
_TAIL_CHARS = 2000


def source_hash() -> str:
    digest = hashlib.sha256()
    for name in SOURCES:
        digest.update(name.encode() + b"\0" + (SOURCE_DIR / name).read_bytes())
    return digest.hexdigest()[:12]


def binary_path(host: Host = LOCAL) -> Path:
    return Path(host.cache_dir()) / "bin" / f"wsload-{source_hash()}"


def go_command(host: Host = LOCAL) -> str | None:
    found = host.which("go")
    return found or (GO_FALLBACK if os.access(GO_FALLBACK, os.X_OK) else None)


def ensure_built(host: Host = LOCAL) -> Path:
    """The binary for the current sources, built now if missing (one build at a time on
    this machine: a lock beside it). LoadError without Go or when the build fails."""
    if host.remote:
        raise LoadError("wsload runs on this machine only for now (--tests websocket with "
                        "the client role on another host)")
    target = binary_path(host)
    if target.is_file():
        return target
    go = go_command(host)
    if go is None:
        raise LoadError("--tests websocket needs Go to build its load generator "
                        "(tools/wsload): install Go (README, Prerequisites)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".wsload.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        partial = target.with_suffix(".partial")
        env = {**host.base_environment(), "GOFLAGS": "-mod=readonly -buildvcs=false"}
        done = host.run([go, "build", "-trimpath", "-o", str(partial), "."],
                        timeout=BUILD_TIMEOUT_S, cwd=SOURCE_DIR, env=env)
        if done.returncode != 0 or not partial.is_file():
            raise LoadError(f"building wsload (tools/wsload, go build) failed:\n"
                            f"{(done.stderr or done.stdout)[-_TAIL_CHARS:]}")
        partial.rename(target)
    return target


def command(binary: str, request: LoadRequest) -> list[str]:
    size = workloads.SIZE_BYTES[request.size] if request.size else workloads.WS_DEFAULT_BYTES
    url = request.base_url.rstrip("/").replace("http", "ws", 1) + workloads.PATHS[
        workloads.WEBSOCKET_TEST]
    argv = [binary, "-url", url, "-connections", str(request.connections),
            "-duration", f"{request.duration_s:g}", "-size", str(size),
            "-timeout", f"{request.timeout_s:g}", "-token", request.token]
    return argv + (["-ca", str(request.ca_file)] if request.ca_file else [])


def parse_output(stdout: str) -> dict:
    """wrk's normalised summary from wsload's JSON line (see the module docstring)."""
    try:
        data = json.loads(stdout.strip().splitlines()[-1])
        sent, echoed = int(data["sent"]), int(data["echoed"])
        window = float(data["duration_s"])
        pairs = [(int(v), int(c)) for v, c in data["latency_us"]]
        raw_errors = {str(k): int(v) for k, v in (data.get("errors") or {}).items()}
    except (IndexError, ValueError, KeyError, TypeError) as exc:
        raise LoadError(f"wsload printed no readable report ({exc!r}): "
                        f"{stdout[-_TAIL_CHARS:]!r}") from None
    unknown = set(raw_errors) - set(ERROR_KINDS)
    if unknown:
        raise LoadError(f"wsload reported error kinds it should not have: {sorted(unknown)}")
    errors = {k: raw_errors.get(k, 0) for k in ERROR_KINDS}
    errors["total"] = sum(errors.values())
    hist, clamped = histogram.from_counts(pairs)
    latency = histogram.percentiles_ms(hist)
    summary = {"requests": echoed, "sent": sent, "unanswered": max(0, sent - echoed),
               "duration_s": window,
               "requests_per_sec": echoed / window if window > 0 else 0.0,
               "bytes": int(data.get("bytes", 0)),
               "latency_ms": {k: latency.get(k) for k in LATENCY_KEYS},
               "errors": errors,
               "latency_histogram": histogram.to_record(hist, clamped)}
    if hist.get_total_count() != echoed:
        summary["latency_histogram_error"] = (f"wsload timed {hist.get_total_count()} round "
                                              f"trips, and counted {echoed} echoes")
    return summary


class Wsload:
    """wsload behind the Generator seam: the closed loop of the websocket test only."""
    name = "wsload"
    open_model = False

    def version(self, host: Host = LOCAL) -> str:
        return f"wsload {source_hash()} ({LIBRARY})"

    def run(self, request: LoadRequest, *, host: Host = LOCAL,
            on_start: Callable[[int], None] | None = None,
            cpus: list[int] | None = None) -> LoadResult:
        check_window(request.duration_s, request.timeout_s, request.token)
        if request.test != workloads.WEBSOCKET_TEST:
            raise LoadError(f"wsload sends WebSocket messages only, not the {request.test} test")
        binary = ensure_built(host)
        argv = command(str(binary), request)
        env = host.base_environment()
        env["GOMAXPROCS"] = str(max(1, request.threads))
        limit = request.duration_s + request.timeout_s + KILL_GRACE_S
        done = host.run(argv, timeout=limit, env=env, on_start=on_start, cpus=cpus)
        if done.timed_out:
            raise LoadError(f"wsload did not finish within {limit:.0f} s and was killed: "
                            f"{' '.join(argv)}")
        if done.returncode != 0:
            raise LoadError(f"wsload exited with status {done.returncode}: {' '.join(argv)}\n"
                            f"{(done.stderr or done.stdout)[-_TAIL_CHARS:]}")
        summary = parse_output(done.stdout)
        return LoadResult(command=argv, summary=summary, client_cpu_s=done.cpu_s,
                          wall_s=done.wall_s, exit_code=done.returncode,
                          stderr_tail=done.stderr[-_TAIL_CHARS:],
                          threads=max(1, request.threads), connections=request.connections)

    def describe(self, request: LoadRequest, result: LoadResult) -> dict:
        return {"message_bytes": workloads.SIZE_BYTES.get(request.size or "", 0)}

    def open_connections(self, connections: int, threads: int) -> int:
        return connections


WSLOAD = Wsload()

