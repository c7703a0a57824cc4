"""The case matrix and the order in which its samples are measured.

A *variant* is a server started against one database, raw or ORM (or against no
database, for the tests that need none). A *case* is one variant measured on one test
with one set of load parameters; a *sample* is one measurement of a case. Every sample
gets a freshly restored table and a freshly started server.
"""
from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field

from bench.core import deps, pipelining, protocols, server_env, suite, workloads
from bench.core.mix import MIX_TEST
from bench.core.manifest import KNOWN_DATABASES, BudgetError, ServerSpec
from bench.core.settings import DB_TESTS, DEFAULT_OPEN_MODEL, NO_DB_TESTS, NO_PROXY, \
    SelectionError, Settings, closed_loop_generators, open_model_generators, rate_base, validate


@dataclass(frozen=True)
class Variant:
    server: ServerSpec
    database: str          # "postgres" | "mysql" | "none"
    orm: bool

    @property
    def key(self) -> str:
        return f"{self.server.label}/{self.database}/{'orm' if self.orm else 'raw'}"


@dataclass(frozen=True)
class LoadParams:
    """The load parameters that are part of a case's identity: the client connections, the
    connection mode, the reverse proxy in front (or none), and the load generator with,
    for an open-model generator, the rate asked for ("50%" of the case's measured maximum,
    or absolute req/s)."""
    connections: int
    connection_mode: str = "keep-alive"
    generator: str = "wrk"
    proxy: str = NO_PROXY
    rate: str | None = None
    # what the clients speak (bench.core.protocols) and, over HTTP/2, the concurrent
    # streams per connection (h2load's -m)
    protocol: str = protocols.DEFAULT
    streams: int = 1
    # HTTP/1.1 requests each connection writes at once (the pipelined test's depth)
    pipeline: int = 1
    # the Accept-Encoding asked for (--compression; bench.core.workloads), from a server
    # started with its compression on; identity: neither
    encoding: str = workloads.IDENTITY

    def as_dict(self) -> dict:
        out = {"connections": self.connections, "connection_mode": self.connection_mode,
               "generator": self.generator, "proxy": self.proxy, "rate": self.rate}
        if self.protocol != protocols.DEFAULT:       # older keys stay as they were
            out.update(protocol=self.protocol, streams=self.streams)
        if self.pipeline != 1:
            out.update(pipeline=self.pipeline)
        if self.encoding != workloads.IDENTITY:
            out.update(encoding=self.encoding)
        return out

    @property
    def suffix(self) -> str:
        """'' for the default parameters, so older case ids stay as they were."""
        parts = []
        if self.connection_mode != "keep-alive":
            parts.append(self.connection_mode)
        if self.protocol != protocols.DEFAULT:
            parts.append(self.protocol + (f"-m{self.streams}" if self.streams != 1 else ""))
        if self.pipeline != 1:
            parts.append(f"pipeline{self.pipeline}")
        if self.encoding != workloads.IDENTITY:
            parts.append(self.encoding)
        if self.proxy != NO_PROXY:
            parts.append(f"behind-{self.proxy}")
        if self.generator not in ("wrk", protocols.HTTP2_GENERATOR):
            parts.append(self.generator)
        if self.rate is not None:
            parts.append(f"r{self.rate}")
        return "".join(f"@{p}" for p in parts)

    @property
    def closed_loop(self) -> "LoadParams":
        """The closed-loop case whose measured maximum a rate point's share refers to:
        wrk's for oha, k6's own for k6 (bench.core.settings.rate_base)."""
        return LoadParams(self.connections, self.connection_mode, rate_base(self.generator),
                          self.proxy, protocol=self.protocol, streams=self.streams,
                          pipeline=self.pipeline, encoding=self.encoding)


@dataclass(frozen=True)
class Case:
    variant: Variant
    test: str
    load: LoadParams = field(default_factory=lambda: LoadParams(64))
    # rows per request of the database suite's queries / updates / cached; None otherwise
    n: int | None = None
    # the mixed test's profile (bench.core.mix.Mix.identity); None for the other tests
    mix: str | None = None
    # the static test's file, the upload test's body (bench.core.workloads); None otherwise
    size: str | None = None

    @property
    def id(self) -> str:
        level = ("" if self.n is None else f"_n{self.n}") + \
            ("" if self.size is None else f"_{self.size}")
        return (f"{self.variant.key}/{self.test.replace(' ', '_')}{level}"
                f"@c{self.load.connections}{self.load.suffix}")

    @property
    def title(self) -> str:
        """The test as tables name it: "queries n=20", "static 64k", "get user"."""
        return workloads.title(suite.title(self.test, self.n), self.size)

    def key(self) -> dict:
        v = self.variant
        level = {} if self.n is None else {"n": self.n}   # older keys stay as they were
        mixed = {} if self.mix is None else {"mix": self.mix}
        sized = {} if self.size is None else {"size": self.size}
        return {"server": v.server.label, "database": v.database, "orm": v.orm,
                "test": self.test, **level, **mixed, **sized, **self.load.as_dict()}


@dataclass(frozen=True)
class Sample:
    case: Case
    index: int             # 0-based repetition
    round: int             # which interleaved round it belongs to


def _orm_wanted(orm: bool, choice: str, spec: ServerSpec) -> bool:
    if choice == "raw-else-orm":
        return orm == (False not in spec.orm)
    return choice == "both" or (choice == "orm") == orm


def load_points(settings: Settings) -> list[LoadParams]:
    """Every combination of the load modes asked for: the closed-loop points of each
    closed-loop generator (wrk unless --generator says otherwise) over each protocol, then
    the open-model points of each open-model generator (oha unless ...) at each rate."""
    shapes = [(level, mode, proxy) for proxy in settings.behind
              for mode in settings.connection_modes for level in settings.levels]
    closed = []
    for protocol in settings.protocols:
        # direct (NO_PROXY) here even where no server speaks the protocol: `plan` puts
        # --tls-proxy in front of each server that does not (server_point)
        streams = settings.streams if protocol in protocols.HTTP2 else (1,)
        for g in closed_loop_generators(settings.generators):
            closed += [LoadParams(level, mode, protocols.generator_for(protocol, g),
                                  proxy, protocol=protocol, streams=m)
                       for level, mode, proxy in shapes for m in streams]
    closed = list(dict.fromkeys(closed))     # HTTP/2's generator is one whatever was asked
    # over h1 and h1-tls (protocols.OPEN_MODEL_PROTOCOLS; Settings refuses the others
    # with --rate), each rate's base the closed-loop case of the same protocol
    return closed + [LoadParams(level, mode, g, proxy, rate, protocol=protocol)
                     for protocol in settings.protocols
                     for g in open_model_generators(settings.generators)
                     for level, mode, proxy in shapes for rate in settings.rates]


def server_point(spec: ServerSpec, point: LoadParams, tls_proxy: str) -> LoadParams:
    """A load point as one server is measured at it: a protocol the server does not speak
    itself (its manifest's `protocols`) goes through the terminating proxy `tls_proxy`,
    as it runs in production; one it speaks is measured directly, on the server's own
    listener. A --behind proxy stays: it terminates the protocol whatever the server
    speaks."""
    if point.protocol == protocols.DEFAULT or point.proxy != NO_PROXY \
            or spec.speaks(point.protocol):
        return point
    return dataclasses.replace(point, proxy=tls_proxy)


OPEN_MODEL_GENERATOR = DEFAULT_OPEN_MODEL


def plan(settings: Settings, specs: dict[str, ServerSpec],
         proxies: list[str] = (), unavailable: dict[str, str] | None = None) -> list[Case]:
    """Cases in a stable order: per server, DB tests per variant, then the no-DB tests,
    each at every load point. Reference servers (the ceiling) come last, for the no-DB
    tests only and only directly (a proxy in front of the ceiling would measure the proxy
    twice): all of them with `ceiling` when any framework is measured, and any named in
    `servers`.

    `unavailable` (server id -> why: a missing or too-old toolchain) is left out of "all
    servers" and of the ceiling; naming one is a SelectionError that gives the reason."""
    validate(settings, list(specs), proxies)
    server_env.parse(settings.server_env)          # a wrong sweep fails before any work
    deps.parse(settings.deps)
    unavailable = unavailable or {}
    check_available(settings.servers, unavailable)
    points = load_points(settings)
    selected = settings.servers or sorted(s for s in specs
                                          if not specs[s].reference and s not in unavailable)
    frameworks = [s for s in selected if not specs[s].reference]
    check_suite(settings, specs, frameworks)
    if settings.deps:
        deps.check(settings.deps, [specs[s] for s in frameworks])
    references = [s for s in selected if specs[s].reference]
    if settings.ceiling and frameworks:
        references += [s for s in sorted(specs) if specs[s].reference and s not in references
                       and s not in unavailable]
    cases: list[Case] = []
    mixed = settings.active_mix.identity if settings.active_mix else None
    for spec in [version for server_id in frameworks
                 for swept in server_env.swept(specs[server_id], settings.server_env)
                 for version in deps.swept(swept, settings.deps)]:
        # one case per point as this server meets it (--behind none,nginx: a protocol it
        # does not speak is the nginx point either way)
        own = list(dict.fromkeys(server_point(spec, p, settings.tls_proxy) for p in points))
        for database, orm in spec.variants():
            if database in settings.databases and _orm_wanted(orm, settings.orm, spec):
                cases += [Case(Variant(spec, database, orm), t, p, n,
                               mixed if t == MIX_TEST else None)
                          for t in DB_TESTS if t in settings.tests
                          and wants(spec, t, settings)
                          for n in settings.n_for(t) for p in own]
        cases += [Case(Variant(spec, "none", False), t, point, size=size)
                  for t in NO_DB_TESTS if t in settings.tests
                  and t not in spec.unsupported
                  for size in workloads.sizes_for(t, settings.sizes) for p in own
                  for point in points_of(spec, p, t, settings)]
    # the ceiling is a throughput: closed-loop points only
    direct = list(dict.fromkeys(dataclasses.replace(p, proxy=NO_PROXY) for p in points
                                if p.rate is None and p.protocol == protocols.DEFAULT))
    for server_id in references:
        cases += [Case(Variant(specs[server_id], "none", False), t, point, size=size)
                  for t in NO_DB_TESTS if t in settings.tests
                  and t not in specs[server_id].unsupported
                  for size in workloads.sizes_for(t, settings.sizes) for p in direct
                  for point in points_of(specs[server_id], p, t, settings)]
    check_budgets(settings, cases)
    return cases


def not_supported(settings: Settings, specs: dict[str, ServerSpec]) -> list[dict]:
    """The (server, test) pairs a run leaves out because the server's manifest says it
    cannot do that HTTP workload ([unsupported]), with why: the tables show them as
    "not supported", never as a silent gap."""
    selected = settings.servers or sorted(specs)
    asked = [*settings.tests, *(["compression", *(f"compression.{e}" for e in
                                                 settings.compression)]
                                if settings.compression else [])]
    return [{"server": specs[s].label, "test": t, "reason": specs[s].unsupported[t]}
            for s in selected if s in specs for t in asked if t in specs[s].unsupported]


def points_of(spec: ServerSpec, point: LoadParams, test: str,
              settings: Settings) -> list[LoadParams]:
    """A load point as `test` meets it on `spec`: the pipelined test's with its depth; to
    json's and static's once per encoding (--compression), where the server has not
    declared compression unsupported; the websocket test's with its own generator, and
    none over HTTP/2 (WebSocket upgrades HTTP/1.1 only here)."""
    if test == workloads.WEBSOCKET_TEST and point.protocol in protocols.HTTP2:
        return []
    point = dataclasses.replace(point, pipeline=pipelining.depth_of(test, settings.pipeline),
                                generator=workloads.generator_of(test, point.generator))
    return [dataclasses.replace(point, encoding=e) for e in
            workloads.encodings_for(test, settings.compression, spec.unsupported)]


def wants(spec: ServerSpec, test: str, settings: Settings) -> bool:
    """A server without a [suite] declaration has none of the suite's endpoints (nor a
    mix that draws from them)."""
    return not settings.needs_suite(test) or spec.suite is not None


def check_suite(settings: Settings, specs: dict[str, ServerSpec], frameworks: list[str]) -> None:
    """Naming a server for a suite test it does not implement is bad input; a run of all
    servers leaves such a server out of those tests only."""
    asked = [t for t in settings.tests if settings.needs_suite(t)]
    lacking = [s for s in settings.servers if s in frameworks and specs[s].databases
               and specs[s].suite is None]
    if asked and lacking:
        raise SelectionError(f"{', '.join(lacking)} implement(s) no database suite (no [suite] "
                             f"in the manifest), so cannot run --tests {', '.join(asked)}")


def check_available(named: list[str], unavailable: dict[str, str]) -> None:
    """Naming a server this machine cannot build or run is bad input, with the reason."""
    refused = [s for s in named if s in unavailable]
    if refused:
        raise SelectionError("; ".join(f"{s} is unavailable on this machine: {unavailable[s]}"
                                       for s in refused))


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
    spread, instead of as a bias that always favours the same case.

    Open-model points whose rate is a share of a case's measured maximum need that
    maximum first: they follow, in rounds of their own, once every closed-loop sample
    is done."""
    rng = random.Random(seed)
    samples: list[Sample] = []
    for phase in ([c for c in cases if c.load.rate is None],
                  [c for c in cases if c.load.rate is not None]):
        for rnd in range(repeat if phase else 0):
            order = list(phase)
            rng.shuffle(order)
            samples += [Sample(case, rnd, rnd) for case in order]
    return samples


PAIR_BLOCKS = ("ABBA", "BAAB")


def paired_schedule(cases: list[Case], repeat: int, seed: int) -> list[Sample]:
    """The order of an A/B run (`ab`): `cases` come in pairs, [a1, b1, a2, b2, ...], the
    same case on the baseline and on the candidate. Each round measures every pair once,
    the pairs in a shuffled order, each as a block of four samples, ABBA or BAAB (drawn
    with `seed`). In such a block both versions sit at the same mean time, so a drift of
    the machine that is linear over the block cancels from their difference, and every B
    sample has an A sample beside it. `repeat` (even) samples per case: repeat / 2 rounds."""
    if len(cases) % 2 or repeat % 2:
        raise ValueError("a paired schedule needs pairs of cases and an even repeat")
    rng = random.Random(seed)
    pairs = [(cases[i], cases[i + 1]) for i in range(0, len(cases), 2)]
    taken = {c.id: 0 for c in cases}
    samples: list[Sample] = []
    for rnd in range(repeat // 2):
        order = list(pairs)
        rng.shuffle(order)
        for pair in order:
            for arm in rng.choice(PAIR_BLOCKS):
                case = pair[0] if arm == "A" else pair[1]
                samples.append(Sample(case, taken[case.id], rnd))
                taken[case.id] += 1
    return samples


def databases_needed(cases: list[Case]) -> list[str]:
    return [d for d in KNOWN_DATABASES if any(c.variant.database == d for c in cases)]
