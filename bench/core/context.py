"""The narrow values each part of a run needs, derived once from the Settings as parsed,
and the values a run resolves for itself, kept beside the settings instead of written
into them.

`Settings` (bench.core.settings) stays what was asked for. A `RunContext` adds what was
decided afterwards (the server host's address chosen from --hosts, the order seed drawn
or taken from a resumed run) and hands each consumer only its part: a server process
gets a `ServerLaunch`, a database provider a `DatabaseSource`, and so on.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from bench.core.counting import CountPlan
from bench.core.mix import Mix
from bench.core.placement import parse_cpu_list, parse_memory_mb
from bench.core.settings import RELAY_PORT_OFFSET, Settings, default_threads

SIDES = ("server", "client", "db")


def _cpu_tuple(text: str | None, side: str) -> tuple[int, ...] | None:
    return None if text is None else tuple(parse_cpu_list(text, f"--{side}-cpus"))


@dataclass(frozen=True)
class Selection:
    """Which servers, databases, variants and tests a run measures."""
    servers: tuple[str, ...]             # empty = all available
    databases: tuple[str, ...]
    orm: str                             # "both", "raw", "orm" or "raw-else-orm"
    tests: tuple[str, ...]
    servers_dirs: tuple[Path, ...]
    ceiling: bool

    @classmethod
    def of(cls, s: Settings) -> "Selection":
        return cls(s.servers, s.databases, s.orm, s.tests, s.servers_dirs, s.ceiling)


@dataclass(frozen=True)
class LoadPlan:
    """How each sample is loaded, measured and judged."""
    duration: float
    warmup: float
    repeat: int
    levels: tuple[int, ...]              # client connection counts, each a case
    threads: int | None                  # None: default_threads(connections)
    connection_modes: tuple[str, ...]
    behind: tuple[str, ...]
    rates: tuple[str, ...]
    knee_p99_ms: float
    burst: float
    timeout: float
    seed: int                            # the request generators' seed
    token: str
    error_threshold: float
    unstable_cv: float
    generators: tuple[str, ...] = ("wrk",)   # --generator (bench.core.settings)
    iterations: int | None = None        # --iterations: k6's closed-loop samples
    # the mixed test's profile (bench.core.mix.Mix), read once: what its scripts draw
    # from, and what each sample and the verification are held against
    mix: Mix | None = None

    @classmethod
    def of(cls, s: Settings) -> "LoadPlan":
        return cls(s.duration, s.warmup, s.repeat, s.levels, s.threads, s.connection_modes,
                   s.behind, s.rates, s.knee_p99_ms, s.burst, s.timeout, s.seed, s.token,
                   s.error_threshold, s.unstable_cv, s.generators, s.iterations,
                   s.active_mix)

    def threads_for(self, connections: int) -> int:
        return self.threads if self.threads is not None else default_threads(connections)


@dataclass(frozen=True)
class ServerLaunch:
    """What starting (or building) one server process needs. The attribute names are
    those of Settings, so code that starts servers reads either; a server behind a proxy
    gets a copy on the upstream port (dataclasses.replace(launch, port=launch.upstream_port))."""
    host: str                            # the address it listens on
    port: int
    token: str
    workers: int
    db_connections: int                  # the budget split over its processes
    server_cpus: tuple[int, ...] | None = None
    runtime_threads: str = "cpus"        # what W means for a threads-scheduling runtime
    server_memory_mb: float | None = None    # the cap on its memory (None = none)
    proxy_memory_mb: float | None = None     # ... and on a --behind proxy's in front of it

    @classmethod
    def of(cls, s: Settings, host: str | None = None) -> "ServerLaunch":
        return cls(host or s.host, s.port, s.token, s.workers, s.db_connections,
                   _cpu_tuple(s.server_cpus, "server"), s.runtime_threads,
                   None if s.server_memory is None else parse_memory_mb(s.server_memory),
                   None if s.proxy_memory is None else parse_memory_mb(s.proxy_memory,
                                                                       "--proxy-memory"))

    @property
    def upstream_port(self) -> int:
        """Where a server listens when a proxy takes `port`."""
        return self.port + 1

    @property
    def relay_port(self) -> int:
        """Where verification's pipelining relay listens (bench.verify.pipelining)."""
        return self.port + RELAY_PORT_OFFSET

    def cpus(self, side: str = "server") -> list[int] | None:
        """The server's CPUs (None = not pinned); a launch knows no other side's."""
        if side != "server":
            raise ValueError(f"a server launch has the server's CPUs only, not the {side}'s")
        return None if self.server_cpus is None else list(self.server_cpus)


@dataclass(frozen=True)
class Placement:
    """The CPUs each side is pinned to (None = not pinned)."""
    server: tuple[int, ...] | None = None
    client: tuple[int, ...] | None = None
    db: tuple[int, ...] | None = None

    @classmethod
    def of(cls, s: Settings) -> "Placement":
        return cls(*(_cpu_tuple(getattr(s, f"{side}_cpus"), side) for side in SIDES))

    def cpus(self, side: str) -> list[int] | None:
        if side not in SIDES:
            raise ValueError(f"unknown side {side!r}: the sides are {', '.join(SIDES)}")
        cpus = getattr(self, side)
        return None if cpus is None else list(cpus)

    @property
    def pinned(self) -> bool:
        return any(getattr(self, side) for side in SIDES)


@dataclass(frozen=True)
class DatabaseSource:
    """Where the databases come from: the names bench.infra.databases.for_settings reads."""
    db_mode: str                         # auto, local, docker or external
    pg_port: int
    mysql_port: int
    postgres_dsn: str | None
    mysql_dsn: str | None
    keep_db: bool
    db_images: str = "auto"              # docker mode's images: auto, official or local

    @classmethod
    def of(cls, s: Settings) -> "DatabaseSource":
        return cls(s.db_mode, s.pg_port, s.mysql_port, s.postgres_dsn, s.mysql_dsn, s.keep_db,
                   s.db_images)

    def port(self, engine: str) -> int:
        return {"postgres": self.pg_port, "mysql": self.mysql_port}[engine]


@dataclass(frozen=True)
class RunContext:
    """The settings as asked, what was resolved for this run beside them, and the narrow
    values derived from both, once. Build one with `RunContext.of`."""
    settings: Settings
    server_address: str                  # where servers listen: --hosts' server, or --host
    order_seed: int | None               # None until a run draws or resumes one
    selection: Selection
    load: LoadPlan
    launch: ServerLaunch
    placement: Placement
    databases: DatabaseSource
    # --instructions: what each count does (None: nothing is counted)
    count: CountPlan | None = None

    @classmethod
    def of(cls, settings: Settings, *, server_address: str | None = None,
           order_seed: int | None = None) -> "RunContext":
        """`server_address` None: the settings' host; `order_seed` None: the one asked
        for (itself None when it is to be drawn)."""
        address = server_address or settings.host
        return cls(settings, address,
                   settings.order_seed if order_seed is None else order_seed,
                   Selection.of(settings), LoadPlan.of(settings),
                   ServerLaunch.of(settings, address), Placement.of(settings),
                   DatabaseSource.of(settings),
                   CountPlan(settings.instructions_requests, settings.instructions_runs,
                             settings.seed, settings.token) if settings.instructions else None)

    def with_order_seed(self, order_seed: int) -> "RunContext":
        return replace(self, order_seed=order_seed)

    def public(self) -> dict:
        """What results.json records as the run's settings: those asked for, with the
        resolved values where they have always been recorded (the address the servers
        listened on, the order seed the schedule was shuffled with)."""
        profile = self.settings.active_mix
        mixed = {"mix_profile": profile.public()} if profile else {}
        return {**self.settings.public(), "host": self.server_address,
                "order_seed": self.order_seed, **mixed}
