"""Run settings, the presets that set several of them together, and their validation.

A `Settings` object is what was *asked* for. What really ran (e.g. the connection count
wrk actually opens) is resolved by `resolve_load()` and stored next to it, so a figure is
never stored with a setting that did not run.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.core.manifest import KNOWN_DATABASES
from bench.paths import REPO

TESTS = ("get user", "update user", "plain", "to json")
DB_TESTS = ("get user", "update user")        # measured per database and ORM variant
NO_DB_TESTS = ("plain", "to json")            # measured once per server, with no database
ORM_CHOICES = ("both", "raw", "orm")


class SelectionError(ValueError):
    """An unknown name or an impossible setting; the message names the flag and what is valid."""


@dataclass(frozen=True)
class Preset:
    name: str
    duration: float
    warmup: float
    repeat: int
    connections: int
    purpose: str


# Short samples repeated beat one long sample: the spread between samples is what tells
# a real difference from noise, and interleaving turns order effects into that spread.
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("quick", 2.0, 1.0, 1, 32, "a smoke run: does everything start and answer"),
    Preset("default", 5.0, 2.0, 3, 64, "the default suite: 3 interleaved samples per case"),
    Preset("nightly", 5.0, 2.0, 5, 64, "regression detection: 5 samples per case, enough "
                                       "for a rank test between two nights"),
    Preset("thorough", 15.0, 5.0, 10, 64, "figures for publication: 10 long samples"),
)}
PRESET_FIELDS = ("duration", "warmup", "repeat", "connections")


def usable_cpus() -> int:
    """CPUs this process may really use: its affinity mask, capped by a cgroup CPU quota."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 1
    try:   # cgroup v2: "max 100000" (no limit) or "200000 100000" (2 CPUs)
        quota, period = Path("/sys/fs/cgroup/cpu.max").read_text().split()[:2]
        if quota != "max":
            count = min(count, max(1, int(int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


def default_threads(connections: int, cpus: int | None = None) -> int:
    """Half the usable CPUs for wrk (wrk and the server share the machine), never more
    threads than connections, and a count that divides the connections evenly (wrk gives
    each thread connections // threads, so anything else silently opens fewer)."""
    cpus = usable_cpus() if cpus is None else cpus
    threads = max(1, min(cpus // 2, connections))
    while connections % threads:
        threads -= 1
    return threads


@dataclass
class Settings:
    servers: list[str] = field(default_factory=list)      # empty = all
    databases: list[str] = field(default_factory=lambda: list(KNOWN_DATABASES))
    orm: str = "both"
    tests: list[str] = field(default_factory=lambda: list(TESTS))
    preset: str = "default"
    duration: float = PRESETS["default"].duration
    warmup: float = PRESETS["default"].warmup
    repeat: int = PRESETS["default"].repeat
    connections: int = PRESETS["default"].connections
    threads: int | None = None           # None: default_threads(connections)
    workers: int = 8
    # Total DB connections a server may hold, split exactly over its processes, so that
    # no framework wins by opening more connections than another. 64 = the default load's
    # 64 client connections: one DB connection per request in flight, so no request queues
    # for a pool connection and p99 measures the framework and the database, not the pool.
    # Chosen from a sweep (README, "Connection budget and tail latency"): the Python
    # servers' p99 halved from 32 to 64 at the same req/s; 16 was worse still.
    db_connections: int = 64
    timeout: float = 5.0
    seed: int = 1                        # the request generators' seed
    order_seed: int | None = None        # the sample order's seed; None: drawn and recorded
    token: str = "hardcoded_token"
    host: str = "127.0.0.1"
    port: int = 18080
    error_threshold: float = 0.001       # fraction of requests sent; above it a sample is invalid
    unstable_cv: float = 0.10            # a case whose req/s CV exceeds this is unstable
    verify: bool = True
    db_mode: str = "auto"
    pg_port: int = 15432
    mysql_port: int = 13306
    postgres_dsn: str | None = None
    mysql_dsn: str | None = None
    keep_db: bool = False
    results_dir: Path = REPO / "results"
    servers_dirs: list[Path] = field(default_factory=lambda: [REPO / "servers"])

    def apply_preset(self, name: str) -> None:
        if name not in PRESETS:
            raise SelectionError(f"unknown --preset {name!r}; valid: {', '.join(PRESETS)}")
        preset = PRESETS[name]
        self.preset = name
        for key in PRESET_FIELDS:
            setattr(self, key, getattr(preset, key))

    @property
    def wrk_threads(self) -> int:
        return self.threads if self.threads is not None else default_threads(self.connections)

    def public(self) -> dict:
        """What results.json records: everything that shapes the numbers, no secrets."""
        d = asdict(self)
        for secret in ("postgres_dsn", "mysql_dsn"):
            d[secret] = bool(d[secret])
        d["token"] = "(default)" if self.token == Settings.token else "(custom)"
        d["threads"] = self.wrk_threads
        d["threads_requested"] = self.threads
        d["results_dir"] = str(self.results_dir)
        d["servers_dirs"] = [str(p) for p in self.servers_dirs]
        return d


def normalise_test(name: str) -> str:
    return name.strip().replace("_", " ").replace("-", " ").lower()


def check_names(kind: str, given: list[str], valid: list[str]) -> None:
    unknown = [g for g in given if g not in valid]
    if unknown:
        raise SelectionError(f"unknown {kind} {', '.join(map(repr, unknown))}; "
                             f"valid: {', '.join(valid)}")


def validate(settings: Settings, server_ids: list[str]) -> None:
    """Every setting checked before any long work starts; the error names the flag."""
    s = settings
    check_names("server", s.servers, sorted(server_ids))
    check_names("database", s.databases, list(KNOWN_DATABASES))
    check_names("test", s.tests, list(TESTS))
    if s.orm not in ORM_CHOICES:
        raise SelectionError(f"unknown --orm {s.orm!r}; valid: {', '.join(ORM_CHOICES)}")
    for flag, value in (("duration", s.duration), ("connections", s.connections),
                        ("workers", s.workers), ("db-connections", s.db_connections),
                        ("repeat", s.repeat), ("timeout", s.timeout)):
        if not value > 0:
            raise SelectionError(f"--{flag} must be positive, got {value}")
    if s.warmup < 0:
        raise SelectionError(f"--warmup must be 0 or more, got {s.warmup}")
    if not 0 <= s.error_threshold < 1:
        raise SelectionError(f"--error-threshold must be a percentage from 0 to 100, "
                             f"got {s.error_threshold * 100:g}")
    if not 0 < s.unstable_cv < 1:
        raise SelectionError(f"--unstable-cv must be a percentage from 0 to 100 (exclusive), "
                             f"got {s.unstable_cv * 100:g}")
    if s.threads is not None:
        if s.threads <= 0:
            raise SelectionError(f"--threads must be positive, got {s.threads}")
        if s.threads > s.connections:
            raise SelectionError(f"--threads {s.threads} exceeds --connections {s.connections}: "
                                 f"wrk needs at least one connection per thread")
        if s.connections % s.threads:
            fits = [t for t in range(1, s.threads + 1) if s.connections % t == 0][-1]
            raise SelectionError(
                f"--connections {s.connections} does not divide over --threads {s.threads}: wrk "
                f"would open only {s.threads * (s.connections // s.threads)} connections. Use "
                f"--threads {fits}, or --connections {s.threads * -(-s.connections // s.threads)}")
    for flag, port in (("port", s.port), ("pg-port", s.pg_port), ("mysql-port", s.mysql_port)):
        if not 1 <= port <= 65535:
            raise SelectionError(f"--{flag} must be a TCP port (1-65535), got {port}")
    if not s.token or any(c.isspace() for c in s.token):
        raise SelectionError("--token must be a non-empty string without whitespace")
