"""The case matrix and the order in which its samples are measured.

A *variant* is a server started against one database, raw or ORM (or against no
database, for the tests that need none). A *case* is one variant measured on one test
with one set of load parameters; a *sample* is one measurement of a case. Every sample
gets a freshly restored table and a freshly started server.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from bench.core.manifest import KNOWN_DATABASES, BudgetError, ServerSpec
from bench.core.settings import DB_TESTS, NO_DB_TESTS, SelectionError, Settings, validate


@dataclass(frozen=True)
class Variant:
    server: ServerSpec
    database: str          # "postgres" | "mysql" | "none"
    orm: bool

    @property
    def key(self) -> str:
        return f"{self.server.id}/{self.database}/{'orm' if self.orm else 'raw'}"


@dataclass(frozen=True)
class LoadParams:
    """The load parameters that are part of a case's identity. Later modes (a concurrency
    sweep, Connection: close, another load generator) add values here, not a new schema."""
    connections: int
    connection_mode: str = "keep-alive"
    generator: str = "wrk"

    def as_dict(self) -> dict:
        return {"connections": self.connections, "connection_mode": self.connection_mode,
                "generator": self.generator}

    @property
    def suffix(self) -> str:
        """'' for the default parameters, so today's case ids stay as they were."""
        parts = []
        if self.connection_mode != "keep-alive":
            parts.append(self.connection_mode)
        if self.generator != "wrk":
            parts.append(self.generator)
        return "".join(f"@{p}" for p in parts)


@dataclass(frozen=True)
class Case:
    variant: Variant
    test: str
    load: LoadParams = field(default_factory=lambda: LoadParams(64))

    @property
    def id(self) -> str:
        return (f"{self.variant.key}/{self.test.replace(' ', '_')}"
                f"@c{self.load.connections}{self.load.suffix}")

    def key(self) -> dict:
        v = self.variant
        return {"server": v.server.id, "database": v.database, "orm": v.orm,
                "test": self.test, **self.load.as_dict()}


@dataclass(frozen=True)
class Sample:
    case: Case
    index: int             # 0-based repetition
    round: int             # which interleaved round it belongs to


def _orm_wanted(orm: bool, choice: str) -> bool:
    return choice == "both" or (choice == "orm") == orm


def plan(settings: Settings, specs: dict[str, ServerSpec]) -> list[Case]:
    """Cases in a stable order: per server, DB tests per variant, then the no-DB tests."""
    validate(settings, list(specs))
    load = LoadParams(settings.connections)
    cases: list[Case] = []
    for server_id in settings.servers or sorted(specs):
        spec = specs[server_id]
        for database, orm in spec.variants():
            if database in settings.databases and _orm_wanted(orm, settings.orm):
                cases += [Case(Variant(spec, database, orm), t, load)
                          for t in DB_TESTS if t in settings.tests]
        cases += [Case(Variant(spec, "none", False), t, load)
                  for t in NO_DB_TESTS if t in settings.tests]
    check_budgets(settings, cases)
    return cases


def check_budgets(settings: Settings, cases: list[Case]) -> None:
    """Refuse, before anything starts, a DB budget a selected server cannot split exactly."""
    for spec in {c.variant.server.id: c.variant.server for c in cases
                 if c.variant.database != "none"}.values():
        try:
            spec.budget(settings.db_connections, settings.workers)
        except BudgetError as exc:
            raise SelectionError(str(exc)) from None


def schedule(cases: list[Case], repeat: int, seed: int) -> list[Sample]:
    """Every (case, repetition) pair, in rounds: each round measures every case once, in
    an order shuffled with `seed`. Order effects (a checkpoint left by the previous
    `update user`, heat, caches) then land on different cases each round and show up as
    spread, instead of as a bias that always favours the same case."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    for rnd in range(repeat):
        order = list(cases)
        rng.shuffle(order)
        samples += [Sample(case, rnd, rnd) for case in order]
    return samples


def databases_needed(cases: list[Case]) -> list[str]:
    return [d for d in KNOWN_DATABASES if any(c.variant.database == d for c in cases)]
