"""The sequence every command that starts something goes through, written once:

    hosts -> preflight -> databases -> builds -> teardown

`run`, `verify`, `serve`, `calibrate` and `build` each open a `Session`:

    with Session(settings, cases, hosts=hosts, needs=FOR_VERIFY) as session:
        endpoints = session.start_databases()
        for server_id, built in session.builds(specs, log_dir): ...
        ... running_server(variant, session.launch, ..., host=session.host("server")) ...

Entering opens the hosts' connections and runs the preflight (PreflightError lists what
is missing); the databases and builds are started by the caller, when it is ready to
record them; leaving stops the databases and closes the hosts, shielded against Ctrl-C,
and says (and keeps, in `cleanup_problems`) what could not be cleaned up. Between
entering and leaving, SIGTERM stops the command the way Ctrl-C does.
"""
from __future__ import annotations

import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Protocol, Sequence

from bench.core.context import RunContext
from bench.core import manifest
from bench.core.manifest import ServerSpec
from bench.core.plan import Case, databases_needed
from bench.core.settings import NO_PROXY, Settings
from bench.infra import databases, db
from bench.infra.cold import cold_build
from bench.infra.hosts import Hosts
from bench.infra.proxy import ProxySpec, build_proxy
from bench.infra.server import ServerError, build, needs_build, template_values
from bench.infra.signals import shielded, sigterm_as_interrupt
from bench.session import preflight
from bench.session.preflight import FOR_RUN, Needs, PreflightError
from bench.setup import toolchains
from bench.storage.document import BuildRecord


class Speaker(Protocol):
    """Where a session says what it does: the run's Display, or the console."""
    def step(self, text: str) -> None: ...
    def note(self, text: str) -> None: ...
    def error(self, text: str) -> None: ...


class Console:
    """A command's plain output: steps and notes on stdout, errors on stderr."""

    def step(self, text: str) -> None:
        print(text, flush=True)

    def note(self, text: str) -> None:
        print(text, flush=True)

    def error(self, text: str) -> None:
        print("\n".join(f"error: {line}" for line in text.splitlines()), file=sys.stderr,
              flush=True)


@dataclass(frozen=True)
class BuildOutcome:
    """One server's build: the record results.json keeps under "builds" (its error is
    the whole message, with the build log's tail), and the one-line reason a failed
    build gives the samples it leaves unmeasured."""
    record: BuildRecord
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.record.ok


def servers_unavailable(specs: dict[str, ServerSpec],
                        hosts: Hosts | None = None) -> dict[str, str]:
    """Server id -> why this machine cannot build or run it. Toolchains are checked where
    the servers are built; on another machine its own `make setup` and the preflight's
    `requires` check stand for it."""
    remote = hosts is not None and hosts.is_remote("server")
    return {} if remote else toolchains.unavailable(specs)


def proxies_unavailable(proxies: dict[str, ProxySpec],
                        hosts: Hosts | None = None) -> dict[str, str]:
    """Proxy name -> why this machine cannot build or run it ([toolchain], requires), as
    for servers; a proxy on another machine: its own `make setup` stands for it."""
    remote = hosts is not None and hosts.is_remote("server")
    return {} if remote else toolchains.unavailable(proxies)


def check_proxies(settings: Settings, proxies: dict[str, ProxySpec],
                  hosts: Hosts | None = None) -> None:
    """Naming an unavailable proxy in --behind is refused with why (SelectionError), as
    naming an unavailable server is."""
    from bench.core.plan import check_available
    check_available([p for p in settings.behind if p != NO_PROXY and p in proxies],
                    proxies_unavailable(proxies, hosts))


def server_address(settings: Settings, hosts: Hosts) -> str:
    """Where servers listen: on their machine's address when it is another machine
    (clients and the harness reach them there), else --host."""
    return hosts.specs["server"].address if hosts.is_remote("server") else settings.host


class Session:
    def __init__(self, settings: Settings, cases: Sequence[Case] = (), *,
                 hosts: Hosts | None = None, needs: Needs = FOR_RUN,
                 display: Speaker | None = None):
        """`cases`: what the command will start (their databases, tools and ports are
        checked); `needs`: what else it uses (bench.session.preflight); `display`: where
        it says what it does (a method's own `display` overrides it, for a caller whose
        display begins later)."""
        self.hosts = hosts or Hosts()
        self.context = RunContext.of(settings, server_address=server_address(settings,
                                                                             self.hosts))
        self.cases = list(cases)
        self.needs = needs
        self.display = display or Console()
        self.provider = None                   # the database provider, once started
        self.endpoints: dict[str, db.Endpoint] = {}
        self.cleanup_problems: list[str] = []
        self._built: dict[str, BuildOutcome] = {}
        self._signals = ExitStack()
        self._closed = False

    @property
    def settings(self) -> Settings:
        return self.context.settings

    @property
    def launch(self):
        """How servers are started (and built): a bench.core.context.ServerLaunch."""
        return self.context.launch

    def host(self, role: str):
        """The host that runs `role` ("client", "server" or "database")."""
        return self.hosts.for_role(role)

    # ------------------------------------------------------------------ hosts, preflight
    def __enter__(self) -> "Session":
        self._signals.enter_context(sigterm_as_interrupt())
        try:
            self.hosts.open()
            found = preflight.problems(self.context, self.cases, self.hosts, self.needs)
            if found:
                raise PreflightError(found)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> list[str]:
        """Stop the databases, close the hosts (each stops what it started); a second
        Ctrl-C waits for it. What could not be cleaned up is said, kept and returned."""
        if self._closed:
            return self.cleanup_problems
        self._closed = True
        try:
            with shielded():
                self.cleanup_problems += self.stop_databases()
                self.cleanup_problems += self.hosts.close()
                for problem in self.cleanup_problems:
                    self.display.error(problem)
        finally:
            self._signals.close()
        return self.cleanup_problems

    # ------------------------------------------------------------------ databases
    def start_databases(self, engines: Iterable[str] | None = None,
                        display: Speaker | None = None) -> dict[str, db.Endpoint]:
        """Start the databases (default: every one the cases need) on the database's host,
        restored and pinned to --db-cpus; their endpoints. ProvisionError when one does
        not start (what did start is stopped again)."""
        engines = databases_needed(self.cases) if engines is None else list(engines)
        if not engines:
            return {}
        if self.provider is not None:
            raise RuntimeError("the session's databases are already started")
        remote = self.hosts.is_remote("database")
        provider = databases.for_settings(
            self.context.databases, engines, host=self.host("database"),
            # a database on another machine listens on its address, where servers reach it
            listen_address=self.hosts.specs["database"].address if remote else "127.0.0.1",
            mode=self.hosts.database_mode)
        speaker = display or self.display
        speaker.step(f"databases ({provider.mode}): starting {', '.join(engines)}")
        if hasattr(provider, "on_step"):        # docker mode's image pulls and builds
            provider.on_step = lambda text: speaker.step(f"databases ({provider.mode}): {text}")
        try:
            self.endpoints = provider.start()
        except BaseException:
            provider.stop()
            raise
        self.provider = provider
        self._pin_databases()
        return dict(self.endpoints)

    def alive(self, engine: str) -> bool:
        """Whether `engine`'s database, started by this session, still runs."""
        return self.provider is not None and engine in self.endpoints \
            and self.provider.alive(engine)

    def restart(self, engine: str) -> db.Endpoint:
        """A database that died, started again (pinned again); its endpoint."""
        if self.provider is None or engine not in self.endpoints:
            raise RuntimeError(f"the session did not start a {engine} database")
        self.endpoints[engine] = self.provider.restart(engine)
        self._pin_databases()
        return self.endpoints[engine]

    def stop_databases(self) -> list[str]:
        """Stop them (unless --keep-db); what could not be cleaned up, e.g. a data folder
        kept because a process still uses it. Nothing when none were started."""
        provider, self.provider, self.endpoints = self.provider, None, {}
        if provider is None:
            return []
        return list(provider.stop() or [])

    def _pin_databases(self) -> None:
        """--db-cpus: every thread of every database process; the backends PostgreSQL
        forks for new connections inherit the postmaster's mask."""
        cpus = self.context.placement.cpus("db")
        if cpus is None:
            return
        for engine in self.endpoints:
            for pid in self.provider.pids(engine):
                self.host("database").pin(pid, cpus)

    # ------------------------------------------------------------------ builds
    def builds(self, specs: Iterable[ServerSpec | ProxySpec], log_dir: Path,
               display: Speaker | None = None) -> Iterator[tuple[str, BuildOutcome]]:
        """Build each server (or --behind proxy, bench.infra.proxy) that has a build step,
        on the server's host, once per session (a second call gives the first build's
        record); yields (its label: a server's id, behind-<name> for a proxy; record) as
        each finishes, so a caller can record it at once. A failed build is a record, not
        an exception: the others still build."""
        say = display or self.display
        for spec in specs:
            if not needs_build(spec):
                continue
            if spec.label not in self._built:
                log = Path(log_dir) / f"build-{spec.label}.log"
                log.parent.mkdir(parents=True, exist_ok=True)
                say.step(f"building {spec.label} (log: {log})")
                self._built[spec.label] = built = self._build(spec, log)
                if built.ok:
                    cold = built.record.cold_seconds
                    say.note(f"built {spec.label} in {built.record.seconds:.1f} s"
                             + (f" (from nothing cached: {cold:.1f} s)"
                                if isinstance(cold, float) else ""))
                else:
                    say.error(built.record.error)
            yield spec.label, self._built[spec.label]

    def _build(self, spec: ServerSpec | ProxySpec, log: Path) -> BuildOutcome:
        cold = None
        try:
            if isinstance(spec, ProxySpec):
                seconds = build_proxy(spec, log, host=self.host("server"))
            else:
                if self.settings.cold_build and self.host("server").remote:
                    self.display.note(f"no cold build of {spec.label}: --cold-build builds "
                                      f"on this machine only, and the server's is another")
                elif self.settings.cold_build:   # first, from nothing (bench.infra.cold)
                    cold = cold_build(spec, lambda s, h: build(s, self.launch, log, host=h),
                                      log)
                seconds = build(spec, self.launch, log, host=self.host("server"))
        except ServerError as exc:
            return BuildOutcome(BuildRecord.failed(str(exc)), reason=exc.reason)
        return BuildOutcome(BuildRecord.succeeded(seconds, self._artefact_sizes(spec), cold))

    def _artefact_sizes(self, spec: ServerSpec | ProxySpec) -> dict | None:
        """MiB of each of what the server runs (its manifest's `artefacts`), on the host
        that built it; None when it declares none or the host cannot tell."""
        if not getattr(spec, "artefacts", ()):
            return None
        host = self.host("server")
        values = template_values(spec, self.launch, "none", host)
        paths = [manifest.expand(a, values) for a in spec.artefacts]
        try:
            found = host.call("sizes", paths=paths)
        except Exception:  # noqa: BLE001 - a size is a figure, never a failed build
            return None
        return {p: None if found.get(p) is None else round(found[p] / 2**20, 2) for p in paths}


