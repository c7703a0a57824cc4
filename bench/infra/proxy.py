"""Reverse proxies in front of a server (`--behind <name>`): discovery and lifecycle.

Adding a proxy is adding a folder `proxies/<name>/` with a `proxy.toml` (how to start it,
see proxies/README.md); the harness never names one. A proxy built from source has a
`build` step and a [toolchain], as a server's manifest: checked before a run (a machine
without the toolchain has the proxy unavailable, with why) and built at the start of a
run that puts it in front, through the servers' build code. A proxy is started through the
Host seam in a process group of its own, is ready only when GET /ping/ through it answers
exactly what the server behind it answers, and is always stopped with its whole group.
"""
from __future__ import annotations

import os
import re
import signal
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from bench.core.manifest import expand
# the spec (stdlib only, for the doctor) is bench.core.proxyspec; its names are re-exported
from bench.core.proxyspec import PROXIES_DIR, ProxySpec, available_proxies, load_proxy  # noqa: F401
from bench.infra.host import LOCAL
from bench.infra.memory_cap import CapUnavailable, MemoryCap
from bench.infra.process_group import ProcessGroup
from bench.infra.seam import Host, HttpUnanswered
from bench.infra.server import WORKERS_SETTLE_S, ServerError, run_build
from bench.paths import SERVERS_DIR

# The server behind is up (its readiness passed) before the proxy starts. Nothing
# listening is refused at once, so a second tells; a connection accepted but answered
# late is a live server still busy starting (a multi-process server's later workers load
# the app after the first one answered readiness), which on a loaded 2-core machine
# took over a second (fastapi's 8 gunicorn workers behind traefik): that one is waited for.
UPSTREAM_WAIT_S = 1.0
UPSTREAM_SLOW_WAIT_S = 20.0
STOP_GRACE_S = 5.0           # then SIGKILL, as for servers


class ProxyError(ServerError):
    """The proxy could not be started or never answered like its upstream; the message
    carries the log's tail (a ServerError, so a run records it like a server failure)."""


def template_values(spec: ProxySpec, host: Host = LOCAL) -> dict[str, str]:
    """The placeholders every proxy.toml string may use but the addresses."""
    return {"python": host.project_path(sys.executable), "dir": host.project_path(spec.dir),
            "proxies_dir": host.project_path(spec.dir.parent),
            "servers_dir": host.project_path(SERVERS_DIR), "cache_dir": host.cache_dir()}


def build_proxy(spec: ProxySpec, log_path: Path, host: Host = LOCAL) -> float:
    """Run the proxy's build step once on `host` (the server's); seconds taken. A
    ServerError when it fails, with the log's tail (as a server's build)."""
    if not spec.build:
        return 0.0
    values = template_values(spec, host)
    return run_build(f"the {spec.name} proxy", [expand(a, values) for a in spec.build],
                     spec.dir, values["cache_dir"], log_path, host)


@dataclass
class RunningProxy:
    """A started, ready proxy: where clients reach it and which processes it is, and
    what its readiness probe negotiated over the case's protocol (None for h1)."""
    spec: ProxySpec
    group: ProcessGroup
    base_url: str
    upstream_url: str
    protocol: str = "h1"
    negotiated: dict | None = None
    memory_cap: MemoryCap | None = None      # --proxy-memory: the cgroup it was born in

    def oom_reason(self) -> str | None:
        """Why it lost a process, when its memory cap made the kernel kill one."""
        return self.memory_cap.oom_reason() if self.memory_cap is not None else None

    @property
    def host(self) -> Host:
        return self.group.host

    @property
    def proc(self):
        """Its process group's leader (what the host's spawn returned)."""
        return self.group.proc

    def pids(self) -> list[int]:
        """Every process of the proxy's tree running now (for the resource sampler)."""
        if not self.group.alive():
            return []
        return [p.pid for p in self.group.members(zombies=False)]

    def workers(self) -> int:
        """Worker processes running now, as the spec's workers_match tells them apart."""
        pattern = re.compile(self.spec.workers_match)
        return sum(1 for p in self.group.tree()[1:]
                   if pattern.search(self.host.command_line(p)))

    def stop(self, grace: float = STOP_GRACE_S) -> float:
        """The spec's stop signal to the process group, SIGKILL to whatever is left after
        `grace` (also processes that left the group); returns seconds taken."""
        return self.group.stop(getattr(signal, self.spec.stop_signal), grace)


def _ping(host: Host, base_url: str) -> tuple[tuple | None, str]:
    """(status, JSON body) of GET /ping/, or None and why not."""
    try:
        answer = host.http_get(f"{base_url}/ping/", timeout=1)
    except HttpUnanswered as exc:
        return None, exc.reason
    try:
        return (answer.status, answer.json()), ""
    except ValueError:
        return None, f"HTTP {answer.status}, not JSON: {answer.text[:120]!r}"


def _url(host: str, port: int, scheme: str = "http") -> str:
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def _upstream_answer(host: Host, url: str) -> tuple:
    """What the server behind answers to GET /ping/; ProxyError (before anything is
    started) when it answers nothing usable: a proxy in front of nothing is a mistake
    of the caller's, and waiting for it would only turn into a timeout."""
    started = time.monotonic()
    while True:
        answer, last = _ping(host, url)
        if answer is not None and answer[0] == 200:
            return answer
        if answer is not None:
            last = f"HTTP {answer[0]} {answer[1]!r}"
        accepted_but_slow = answer is None and last == "ReadTimeout"
        budget = UPSTREAM_SLOW_WAIT_S if accepted_but_slow else UPSTREAM_WAIT_S
        if time.monotonic() - started > budget:
            raise ProxyError(f"the upstream {url} does not answer GET /ping/ with 200 (last: "
                             f"{last}): start the server there before the proxy in front of it")
        time.sleep(0.05)


def proxy_environment(spec: ProxySpec, values: dict[str, str], protocol: str = "h1",
                      tls=None) -> dict[str, str]:
    """The proxy's environment: where it listens and forwards, W, and what its clients
    speak (BENCH_PROXY_PROTOCOL, with the run's certificate for TLS)."""
    env = {**os.environ,
           "BENCH_PROXY_NAME": spec.name,
           "BENCH_PROXY_HOST": values["listen_host"], "BENCH_PROXY_PORT": values["listen_port"],
           "BENCH_UPSTREAM_HOST": values["upstream_host"],
           "BENCH_UPSTREAM_PORT": values["upstream_port"],
           "BENCH_WORKERS": values["workers"], "PYTHONUNBUFFERED": "1",
           "BENCH_PROXY_PROTOCOL": protocol}
    if tls is not None:
        env.update(BENCH_TLS_CERT=str(tls.cert), BENCH_TLS_KEY=str(tls.key))
    env.update({k: expand(v, values) for k, v in spec.env.items()})
    return env


@contextmanager
def running_proxy(spec: ProxySpec, *, listen_host: str, listen_port: int, upstream_host: str,
                  upstream_port: int, workers: int, log_path: Path | None,
                  cpus: list[int] | None = None, host: Host = LOCAL,
                  protocol: str = "h1", tls=None,
                  memory_mb: float | None = None) -> Iterator[RunningProxy]:
    """The proxy `spec` on listen_host:listen_port in front of the server at
    upstream_host:upstream_port (already running), ready, and always stopped.

    Ready means GET /ping/ through the proxy answers the status and JSON body the upstream
    answers directly, within spec.ready_timeout; otherwise ProxyError with the log's tail.
    The proxy gets `workers` (the same W as the servers) and runs on `cpus` if given.
    `protocol` (bench.core.protocols) is what its clients speak, `tls` the run's
    certificates (bench.infra.certs) when that is over TLS: its readiness is then asked
    over that protocol, and what it negotiated must be that protocol, TLS 1.3 and the
    run's cipher suite."""
    from bench.core import protocols
    from bench.infra.certs import on_host
    if protocol not in spec.protocols:
        raise ProxyError(f"the {spec.name} proxy does not terminate {protocol} (its "
                         f"proxy.toml's protocols: {', '.join(spec.protocols)})")
    values = {**template_values(spec, host), "listen_host": listen_host,
              "listen_port": str(listen_port), "upstream_host": upstream_host,
              "upstream_port": str(upstream_port), "workers": str(workers)}
    base_url = _url(listen_host, listen_port, protocols.scheme(protocol))
    upstream_url = _url(upstream_host, upstream_port)
    # Each check's connection is closed when it ends (Host.http_get): none of the
    # harness's own stays open to the server or the proxy while the load runs.
    expected = _upstream_answer(host, upstream_url)
    if not host.port_is_free(listen_port, listen_host):
        raise ProxyError(f"port {listen_port} is busy before starting the {spec.name} proxy: "
                         f"another process listens there")
    argv = [expand(a, values) for a in spec.start]
    cap = None
    if memory_mb is not None:      # born in its capped cgroup, as a capped server is
        try:
            cap = MemoryCap.open(host, "proxy", memory_mb)
        except CapUnavailable as exc:
            raise ProxyError(f"cannot cap the {spec.name} proxy's memory at {memory_mb:g} MiB "
                             f"on {host.name}: {exc}") from None
        argv = cap.argv(argv)
    try:
        group = ProcessGroup.start(host, argv, cwd=spec.dir,
                                   env=proxy_environment(spec, values, protocol,
                                                         on_host(tls, host) if tls else None),
                                   log_path=log_path, cpus=cpus)
    except FileNotFoundError as exc:
        if cap is not None:
            cap.close()
        raise ProxyError(f"cannot start the {spec.name} proxy: {exc.filename} not found") from exc
    running = RunningProxy(spec, group, base_url, upstream_url, protocol, memory_cap=cap)
    try:
        _wait_ready(running, expected, log_path, tls)
        _wait_workers(running, workers)
        yield running
    finally:
        running.stop()
        if cap is not None:
            cap.close()
        _wait_port_free(host, listen_host, listen_port)


def _probe(running: RunningProxy, tls) -> tuple[tuple | None, str]:
    """(status, JSON body) of GET /ping/ through the proxy over its protocol, or None and
    why not; over TLS or HTTP/2 it keeps what was negotiated."""
    if running.protocol == "h1":
        return _ping(running.host, running.base_url)
    from bench.infra import protocol_probe
    try:
        answer = protocol_probe.get(f"{running.base_url}/ping/", running.protocol,
                                    ca=tls.ca if tls is not None else None, timeout=1)
    except protocol_probe.ProtocolError as exc:
        if exc.final:              # asking again until the timeout would change nothing
            raise ProxyError(f"the {running.spec.name} proxy at {running.base_url} cannot "
                             f"answer --protocol {running.protocol}: {exc}") from None
        return None, str(exc)
    running.negotiated = answer.negotiated()
    wrong = answer.problems(running.protocol)
    if wrong:
        raise ProxyError(f"the {running.spec.name} proxy at {running.base_url} answered "
                         f"--protocol {running.protocol} but {'; '.join(wrong)}")
    return (answer.status, answer.body), ""


def _wait_ready(running: RunningProxy, expected: tuple, log_path: Path | None,
                tls=None) -> None:
    spec, start, last = running.spec, time.monotonic(), "no answer"
    while time.monotonic() - start < spec.ready_timeout:
        if running.proc.poll() is not None:
            why = running.oom_reason()
            raise ProxyError(f"the {spec.name} proxy exited with code {running.proc.returncode} "
                             f"before it was ready{': ' + why if why else ''}", log_path)
        answer, why = _probe(running, tls)
        if answer == expected:
            running.pids()
            return
        last = why or f"HTTP {answer[0]} {answer[1]!r}"
        time.sleep(0.05)
    raise ProxyError(f"the {spec.name} proxy at {running.base_url} did not answer GET /ping/ "
                     f"like its upstream {running.upstream_url} within {spec.ready_timeout:.0f} s "
                     f"(upstream: HTTP {expected[0]} {expected[1]!r}; proxy, last: {last})",
                     log_path)


def _wait_workers(running: RunningProxy, workers: int) -> None:
    """Until all W workers exist (a worker nginx forks answers /ping/ before its siblings
    exist or carry their title), for at most WORKERS_SETTLE_S; a proxy short of workers
    after that is measured as it is, its processes in the resources as always."""
    if not running.spec.workers_match:
        return
    deadline = time.monotonic() + WORKERS_SETTLE_S
    while running.workers() < workers and time.monotonic() < deadline:
        if running.proc.poll() is not None:
            raise ProxyError(f"the {running.spec.name} proxy exited with code "
                             f"{running.proc.returncode} while its workers started")
        time.sleep(0.02)
    running.pids()


def _wait_port_free(host: Host, listen_host: str, port: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not host.port_is_free(port, listen_host) and time.monotonic() < deadline:
        time.sleep(0.05)
