"""The one sequence every command uses to bring a server up and down:
restore the table -> (let the database settle) -> start the server -> wait until it answers
as itself -> (verify) -> (start a reverse proxy in front of it) -> use it -> stop the proxy
and the server's whole process group. `run`, `verify`, `serve` and the contract tests
all go through `running_server`, so they cannot drift apart.
"""
from __future__ import annotations

import dataclasses
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra import db
from bench.infra.host import LOCAL, Host
from bench.infra.server import ServerProcess, in_use
from bench.infra.signals import shielded


@dataclass
class Running:
    server: ServerProcess
    # restore, start_to_ping, start_to_ready, stop, total
    overhead_s: dict = field(default_factory=dict)
    verification: Any = None                          # what the verifier returned, if any
    settled: Any = None                               # what settle_db returned, if any
    proxy: Any = None                                 # the proxy in front, if any
    tls: Any = None                                   # the run's certificates, over TLS
    native: Any = None           # the server's own listener of the case's protocol, if any

    @property
    def protocol_url(self) -> str | None:
        """Where the case's protocol is spoken: the proxy, else the server's own listener
        of it (None: HTTP/1.1 directly)."""
        if self.proxy is not None:
            return self.proxy.base_url
        return self.native.base_url if self.native is not None else None

    @property
    def base_url(self) -> str:
        """Where the load goes: the proxy when there is one, else the server's own listener
        of the case's protocol, else the server."""
        return self.protocol_url or self.server.base_url

    @property
    def warnings(self) -> list[str]:
        """What went wrong without costing the sample (e.g. the server's log could not be
        fetched from its host): complete once the server has stopped."""
        return list(self.server.warnings)


@contextmanager
def running_server(variant: Variant, settings: Settings, endpoint: db.Endpoint | None,
                   log_path: Path | None, *,
                   verifier: Callable[[ServerProcess], Any] | None = None,
                   overhead_s: dict | None = None,
                   settle_db: Callable[[], Any] | None = None,
                   proxy: Any = None, host: Host = LOCAL,
                   on_phase: Callable[[str], None] = lambda name: None,
                   protocol: str = "h1", tls: Any = None,
                   listeners: dict[str, str] | None = None,
                   first_request: tuple[str, dict] | None = None,
                   counter: Any = None, compression: bool = False) -> Iterator[Running]:
    """A freshly restored table and a freshly started, ready server; always stopped.

    `proxy` (a ProxySpec): the server listens on the upstream port and the proxy takes
    the server's port, so clients find it where they would find the server; its clients
    speak `protocol` (bench.core.protocols), over TLS with `tls` (bench.infra.certs).
    Without a proxy, a `protocol` besides h1 is the server's own (its manifest says it
    speaks it): it listens for it on the settings' port and over HTTP/1.1 on the upstream
    one, as behind a proxy (bench.infra.native); the load goes to that listener.
    `listeners`: the environment of more listeners of the server's own beside it
    (verification's, bench.infra.native.verification_listeners).
    `first_request` (path, headers): the case's own endpoint, asked once /ping/
    answered; the seconds from the spawn to its first 200 are `start_to_first_answer`.
    `counter` (bench.infra.counters): the server starts under it, with its manifest's
    [instructions] environment (a count, bench.runner.count). `compression`: with its
    response compression on (BENCH_COMPRESSION=1, a --compression case).
    `on_phase` hears each step's name as it begins (a progress display shows it).
    `overhead_s` (a dict of the caller's, or a new one) is filled as the steps happen, so
    a caller that catches an exception still has the timings of the steps that ran.
    ServerError propagates (it carries the server log's tail)."""
    from bench.core.protocols import DEFAULT
    native = proxy is None and protocol != DEFAULT
    server_settings = settings if proxy is None and not native else \
        dataclasses.replace(settings, port=settings.upstream_port)
    running = Running(ServerProcess(variant, server_settings, endpoint, log_path, host),
                      overhead_s if overhead_s is not None else {})
    if native:
        from bench.infra import native as own
        if not variant.server.speaks(protocol):
            raise ValueError(f"{variant.server.id} does not speak {protocol} itself: a "
                             f"terminating proxy must be in front")
        from bench.infra.certs import on_host
        running.server.listeners = own.listener_env(
            protocol, settings.port, on_host(tls, host) if tls is not None else None)
    elif listeners:
        running.server.listeners = dict(listeners)
    running.server.first_request = first_request
    running.server.counter = counter
    running.server.compression = compression
    running.tls = tls
    overhead = running.overhead_s
    if endpoint is not None:
        on_phase("restore")
    overhead["restore"] = round(db.restore(endpoint), 4) if endpoint is not None else 0.0
    if settle_db is not None:
        on_phase("settle")
        # the restore's and the previous sample's deferred work, done before anyone measures
        running.settled = settle_db()
        overhead["settle"] = round(running.settled.seconds, 4)
    in_front, build_held = ExitStack(), ExitStack()
    try:
        # its build is not redone under it until it has stopped (bench.infra.server)
        build_held.enter_context(in_use(variant.server, settings, host))
        t0 = time.monotonic()
        on_phase("start")
        running.server.start()
        running.server.wait_ready()
        overhead["start_to_ready"] = round(time.monotonic() - t0, 4)
        if running.server.ping_s is not None:    # the start-up figure: spawn to /ping/
            overhead["start_to_ping"] = round(running.server.ping_s, 4)
        if running.server.first_answer_s is not None:     # ... to the case's endpoint
            overhead["start_to_first_answer"] = round(running.server.first_answer_s, 4)
        if native:
            running.native = own.wait_listening(running.server, protocol, settings.host,
                                                settings.port, tls)
        if verifier is not None:
            on_phase("verify")
            running.verification = verifier(running.server)
        if proxy is not None:
            from bench.infra.proxy import running_proxy
            on_phase("proxy")
            t0 = time.monotonic()
            running.proxy = in_front.enter_context(running_proxy(
                proxy, listen_host=settings.host, listen_port=settings.port,
                upstream_host=settings.host, upstream_port=server_settings.port,
                workers=settings.workers, log_path=log_path,
                cpus=settings.cpus("server"), host=host, protocol=protocol, tls=tls,
                memory_mb=settings.proxy_memory_mb))
            overhead["proxy_start"] = round(time.monotonic() - t0, 4)
        yield running
    finally:
        on_phase("stop")
        with shielded():
            in_front.close()
            overhead["stop"] = round(running.server.stop(), 4)
            build_held.close()
            overhead["total"] = round(sum(overhead.get(k, 0.0) for k in
                                      ("restore", "settle", "start_to_ready", "proxy_start",
                                       "stop")), 4)
