"""Run settings and the case matrix: which server variants run which tests.

A *variant* is a server started against one database, raw or ORM (or against no
database, for the tests that need none). A *case* is one variant measured on one test;
each case gets a freshly restored table and a freshly started server.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from bench.manifest import KNOWN_DATABASES, ServerSpec

REPO = Path(__file__).resolve().parent.parent
TESTS = ("get user", "update user", "plain", "to json")
DB_TESTS = ("get user", "update user")        # measured per database and ORM variant
NO_DB_TESTS = ("plain", "to json")            # measured once per server, with no database
ORM_CHOICES = ("both", "raw", "orm")


class SelectionError(ValueError):
    """An unknown name on the command line; the message lists the valid ones."""


@dataclass
class Settings:
    servers: list[str] = field(default_factory=list)      # empty = all
    databases: list[str] = field(default_factory=lambda: list(KNOWN_DATABASES))
    orm: str = "both"
    tests: list[str] = field(default_factory=lambda: list(TESTS))
    duration: float = 10.0
    warmup: float = 3.0
    connections: int = 64
    # Half the cores for the load generator (at least one thread): on a small machine
    # wrk and the server share the CPU, and the client-bound check reports when wrk
    # is the limit.
    threads: int = max(1, (os.cpu_count() or 2) // 2)
    workers: int = 8
    # Total DB connections a server may hold, split evenly over its processes, so that
    # no framework wins by opening more connections than another.
    db_connections: int = 32
    timeout: float = 5.0
    seed: int = 1
    token: str = "hardcoded_token"
    host: str = "127.0.0.1"
    port: int = 18080
    error_threshold: float = 0.001        # fraction of requests; above it a run is invalid
    verify: bool = True
    db_mode: str = "auto"
    pg_port: int = 15432
    mysql_port: int = 13306
    postgres_dsn: str | None = None
    mysql_dsn: str | None = None
    keep_db: bool = False
    results_dir: Path = REPO / "results"
    servers_dirs: list[Path] = field(default_factory=lambda: [REPO / "servers"])

    def public(self) -> dict:
        """What results.json records: everything that shapes the numbers, no secrets."""
        d = asdict(self)
        for secret in ("postgres_dsn", "mysql_dsn"):
            d[secret] = bool(d[secret])
        d["results_dir"] = str(self.results_dir)
        d["servers_dirs"] = [str(p) for p in self.servers_dirs]
        return d


@dataclass(frozen=True)
class Variant:
    server: ServerSpec
    database: str          # "postgres" | "mysql" | "none"
    orm: bool

    @property
    def key(self) -> str:
        return f"{self.server.id}/{self.database}/{'orm' if self.orm else 'raw'}"


@dataclass(frozen=True)
class Case:
    variant: Variant
    test: str

    @property
    def id(self) -> str:
        return f"{self.variant.key}/{self.test.replace(' ', '_')}"


def normalise_test(name: str) -> str:
    return name.strip().replace("_", " ").replace("-", " ").lower()


def _check_names(kind: str, given: list[str], valid: list[str]) -> None:
    unknown = [g for g in given if g not in valid]
    if unknown:
        raise SelectionError(f"unknown {kind} {', '.join(map(repr, unknown))}; "
                             f"valid: {', '.join(valid)}")


def validate(settings: Settings, specs: dict[str, ServerSpec]) -> None:
    _check_names("server", settings.servers, sorted(specs))
    _check_names("database", settings.databases, list(KNOWN_DATABASES))
    _check_names("test", settings.tests, list(TESTS))
    if settings.orm not in ORM_CHOICES:
        raise SelectionError(f"unknown --orm {settings.orm!r}; valid: {', '.join(ORM_CHOICES)}")
    for name, value in (("duration", settings.duration), ("connections", settings.connections),
                        ("threads", settings.threads), ("workers", settings.workers),
                        ("db-connections", settings.db_connections)):
        if value <= 0:
            raise SelectionError(f"--{name} must be positive, got {value}")
    if settings.threads > settings.connections:
        raise SelectionError("--threads must not exceed --connections (wrk needs a "
                             "connection per thread)")


def _orm_wanted(orm: bool, choice: str) -> bool:
    return choice == "both" or (choice == "orm") == orm


def plan(settings: Settings, specs: dict[str, ServerSpec]) -> list[Case]:
    """Cases in run order: per server, DB tests per variant, then the no-DB tests."""
    validate(settings, specs)
    cases: list[Case] = []
    for server_id in settings.servers or sorted(specs):
        spec = specs[server_id]
        for database, orm in spec.variants():
            if database in settings.databases and _orm_wanted(orm, settings.orm):
                cases += [Case(Variant(spec, database, orm), t)
                          for t in DB_TESTS if t in settings.tests]
        cases += [Case(Variant(spec, "none", False), t)
                  for t in NO_DB_TESTS if t in settings.tests]
    return cases


def databases_needed(cases: list[Case]) -> list[str]:
    return [d for d in KNOWN_DATABASES if any(c.variant.database == d for c in cases)]
