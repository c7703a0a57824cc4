"""Run settings, the presets that set several of them together, and their validation.

A `Settings` object is what was *asked* for. What really ran (e.g. the connection count
wrk actually opens) is resolved by `resolve_load()` and stored next to it, so a figure is
never stored with a setting that did not run.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from pathlib import Path

from bench.core import counting, mix, pipelining, protocols, proxyspec, suite, workloads
from bench.core.errors import SelectionError, check_names
# the CPU lists and memory caps each role runs under (what existing importers expect here)
from bench.core.placement import (format_cpu_list, parse_cpu_list, parse_memory_mb,  # noqa: F401
                                  validate_placement)
from bench.core.manifest import KNOWN_DATABASES
# the generators and the models each runs (what existing importers expect here)
from bench.core.generators import (DEFAULT_CLOSED_LOOP, DEFAULT_OPEN_MODEL,  # noqa: F401
                                   GENERATOR_MODELS, closed_loop_generators,
                                   open_model_generators, rate_base, validate_generators)
from bench.paths import REPO

TESTS = ("get user", "update user", "plain", "to json")      # the default four
ALL_TESTS = TESTS + suite.SUITE_TESTS                        # `--tests all`, the suite preset
# every test --tests knows: the eight, `mixed`, whose endpoints a profile weighs
# (bench.core.mix), and the HTTP workloads (`pipelined`: bench.core.pipelining); `all`
# stays the eight, each a single endpoint at the default load
KNOWN_TESTS = ALL_TESTS + (mix.MIX_TEST, *workloads.HTTP_WORKLOADS)
# measured per database and ORM variant
DB_TESTS = ("get user", "update user", *suite.SUITE_TESTS, mix.MIX_TEST)
# measured once per server, with no database
NO_DB_TESTS = ("plain", "to json", *workloads.HTTP_WORKLOADS)
# raw-else-orm: each server's raw variant, its ORM one where it has no raw (one variant
# per server and engine: "every server, raw where it has it")
ORM_CHOICES = ("both", "raw", "orm", "raw-else-orm")
# keep-alive: one TCP connection per client connection for the whole window (wrk's
# default); close: `Connection: close` on every request, a new TCP connection each time
CONNECTION_MODES = ("keep-alive", "close")
NO_PROXY = "none"
# verification's pipelining relay listens next to the server's port and its upstream one
RELAY_PORT_OFFSET = 2


@dataclass(frozen=True)
class Preset:
    name: str
    duration: float
    warmup: float
    repeat: int
    connections: int
    purpose: str
    burst: float = 0.0
    tests: tuple[str, ...] | None = None     # None: the tests asked for (default: the four)


# Short samples repeated beat one long sample: the spread between samples is what tells
# a real difference from noise, and interleaving turns order effects into that spread.
PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("quick", 2.0, 1.0, 1, 32, "a smoke run: does everything start and answer"),
    Preset("default", 5.0, 2.0, 3, 64, "the default suite: 3 interleaved samples per case"),
    Preset("nightly", 5.0, 2.0, 5, 64, "regression detection: 5 samples per case, enough "
                                       "for a rank test between two nights"),
    Preset("thorough", 15.0, 5.0, 10, 64, "figures for publication: 10 long samples"),
    # the default load on all eight tests: the four and the database suite (queries,
    # updates, fortunes, cached), each at its default n
    Preset("suite", 5.0, 2.0, 3, 64, "the default load on all eight tests, the database "
                                     "suite included", tests=ALL_TESTS),
    # `ab`'s: baseline and candidate in one sitting, 5 rounds of ABBA/BAAB blocks (10
    # samples per version); short samples, because blocks, not long windows, beat drift
    Preset("ab", 3.0, 1.0, 10, 64, "A/B of two versions in one sitting (the ab command): "
                                   "5 rounds of ABBA / BAAB blocks"),
    # not a figure for a table: does a server survive 512 connections for 30 s, then a
    # burst of new connections (Connection: close), without errors, a crashed worker or
    # memory that keeps growing?
    Preset("stress", 30.0, 2.0, 1, 512, "robustness: 512 connections for 30 s, then a "
                                        "5 s burst of new connections", burst=5.0),
)}
PRESET_FIELDS = ("duration", "warmup", "repeat", "connections", "burst")


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


RUNTIME_THREADS = ("cpus", "workers")

# the fields that hold several values: tuples, so that a Settings cannot change after
# parsing (a caller may still give lists; they are frozen on construction)
SEQUENCE_FIELDS = ("servers", "databases", "tests", "connection_levels", "connection_modes",
                   "behind", "rates", "servers_dirs", "n_levels", "server_env",
                   "deps", "generators", "protocols", "streams", "sizes", "compression")

@dataclass(frozen=True)
class Settings:
    """What was asked for, as parsed; never changed afterwards. What a run decides for
    itself (the server host's address from --hosts, the drawn order seed) is kept beside
    it, in bench.core.context.RunContext."""
    servers: tuple[str, ...] = ()                        # empty = all
    databases: tuple[str, ...] = tuple(KNOWN_DATABASES)
    orm: str = "both"
    tests: tuple[str, ...] = TESTS
    preset: str = "default"
    duration: float = PRESETS["default"].duration
    warmup: float = PRESETS["default"].warmup
    repeat: int = PRESETS["default"].repeat
    connections: int = PRESETS["default"].connections
    threads: int | None = None           # None: default_threads(connections)
    # the concurrency sweep: several client connection counts, each its own case (None:
    # just `connections`, which a preset sets)
    connection_levels: tuple[int, ...] | None = None
    connection_modes: tuple[str, ...] = ("keep-alive",)
    # the database suite's n (rows per request of queries / updates / cached): each level
    # a case of its own; None = each test's default (bench.core.suite.DEFAULT_N)
    n_levels: tuple[int, ...] | None = None
    # what W means for a runtime that schedules its own work on threads (Go, tokio,
    # actix): "cpus" = as many threads as the CPUs the server may use, at most W;
    # "workers" = W threads (bench.core.manifest.ServerSpec.workers_for)
    runtime_threads: str = "cpus"
    # a settings sweep: "NAME=V1,V2" items, a framework measured per combination of values
    server_env: tuple[str, ...] = ()          # in its environment (bench.core.server_env)
    deps: tuple[str, ...] = ()      # a release sweep: "NAME=V1,V2" items (bench.core.deps)
    # "none" = clients talk to the server directly; a proxy name (proxies/<name>/) puts
    # that reverse proxy in front of every server; several = each a case of its own
    behind: tuple[str, ...] = (NO_PROXY,)
    # what the clients speak, a case each, through `tls_proxy` where a server does not
    # (bench.core.protocols); `streams`: HTTP/2's per connection (h2load -m), a case each
    protocols: tuple[str, ...] = ("h1",)
    streams: tuple[int, ...] = (1,)
    # the pipelined test's requests per batch on each connection (--pipeline); the static
    # test's files and the upload test's bodies (--size; None: each test's default levels)
    pipeline: int = pipelining.DEFAULT_DEPTH
    sizes: tuple[str, ...] | None = None
    # to json and static also asked for compressed: each encoding a case (--compression)
    compression: tuple[str, ...] = ()
    tls_proxy: str = "nginx"
    # measure the reference servers (manifest `reference = true`, e.g. nginx answering
    # from its config) in the same run, as the ceiling of the `plain`/`to json` tables
    ceiling: bool = True
    # CPU placement (Linux CPU lists such as "0-3,8"); None = not pinned
    server_cpus: str | None = None
    client_cpus: str | None = None
    db_cpus: str | None = None
    # a memory cap on every server process ("512M", "2G"; bench.infra.memory_cap); None = none
    server_memory: str | None = None
    # ... and on the --behind proxy's (its whole process tree, each start)
    proxy_memory: str | None = None
    # the mixed test's profile file (bench.core.mix); None: mixes/small-api.toml
    mix: str | None = None
    # each server built from nothing cached first (bench.infra.cold), its seconds recorded
    cold_build: bool = False
    # --instructions: each case's instructions and system calls per request, counted after
    # its samples (bench.core.counting): N requests, R counts of each case, the counter
    instructions: bool = False
    instructions_requests: int = counting.DEFAULT_REQUESTS
    instructions_runs: int = 1
    counter: str = "auto"
    # open-model points: "50%" of the case's measured maximum req/s, or absolute req/s
    rates: tuple[str, ...] = ()
    # the load generators (--generator): each runs the models it can (wrk the closed
    # loop, oha and k6 both); a model none of them runs gets its default
    generators: tuple[str, ...] = ("wrk",)
    # k6's closed loop as `k6 run --vus V --iterations N`: N requests per measured sample,
    # --duration the cap; None = a window of --duration
    iterations: int | None = None
    # the knee of a latency-vs-rate curve: the highest rate whose p99 stays under this
    knee_p99_ms: float = 20.0
    # after the measured window: this many seconds of new connections (Connection: close
    # at the same connection count), checked for errors and crashed workers (0 = none)
    burst: float = 0.0
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
    # Other processes' share of the CPU above which a sample is marked (5 %: on 2 cores a
    # tenth of a core, about what moves req/s by compare's 3 % floor; idle daemons: far less)
    foreign_cpu_limit: float = 0.05
    strict: bool = False                 # a sample above that limit is invalid, not marked
    verify: bool = True
    db_mode: str = "auto"
    pg_port: int = 15432
    mysql_port: int = 13306
    postgres_dsn: str | None = None
    mysql_dsn: str | None = None
    keep_db: bool = False
    db_images: str = "auto"              # --db-images: docker mode's database images
    results_dir: Path = REPO / "results"
    servers_dirs: tuple[Path, ...] = (REPO / "servers",)

    def __post_init__(self) -> None:
        for name in SEQUENCE_FIELDS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    def cpus(self, side: str) -> list[int] | None:
        """The CPUs `side` ("server", "client" or "db") is pinned to; None = not pinned."""
        text = getattr(self, f"{side}_cpus")
        return None if text is None else parse_cpu_list(text, f"--{side}-cpus")

    @property
    def server_memory_mb(self) -> float | None:
        """The cap on each server's memory in MiB (None = no cap), as ServerLaunch has it."""
        return None if self.server_memory is None else parse_memory_mb(self.server_memory)

    @property
    def proxy_memory_mb(self) -> float | None:
        """The cap on each --behind proxy's memory in MiB (None = no cap)."""
        return None if self.proxy_memory is None else \
            parse_memory_mb(self.proxy_memory, "--proxy-memory")

    @property
    def upstream_port(self) -> int:
        """Where a server listens when a proxy takes `port`."""
        return self.port + 1

    def with_preset(self, name: str) -> "Settings":
        """A copy with the preset's duration, warm-up, repeat, connections and burst."""
        if name not in PRESETS:
            raise SelectionError(f"unknown --preset {name!r}; valid: {', '.join(PRESETS)}")
        preset = PRESETS[name]
        tests = {"tests": preset.tests} if preset.tests else {}
        return replace(self, preset=name, **tests,
                       **{key: getattr(preset, key) for key in PRESET_FIELDS})

    @property
    def relay_port(self) -> int:
        """Where verification's pipelining relay listens (bench.verify.pipelining)."""
        return self.port + RELAY_PORT_OFFSET

    @property
    def with_suite(self) -> bool:
        """Whether any of the database suite's endpoints is asked: one of its tests, or a
        mix that draws from them."""
        return any(self.needs_suite(t) for t in self.tests)

    @property
    def pipelined_depth(self) -> int | None:
        """The pipelined test's depth when it is among --tests (what verification sends
        at once), else None."""
        return self.pipeline if pipelining.PIPELINED_TEST in self.tests else None

    def needs_suite(self, test: str) -> bool:
        """Whether `test` sends requests to the database suite's endpoints."""
        if test == mix.MIX_TEST:
            return self.load_mix().needs_suite
        return test in suite.SUITE_TESTS

    def load_mix(self) -> "mix.Mix":
        """The mixed test's profile, read and checked (MixError says what is wrong)."""
        return mix.load(self.mix or mix.DEFAULT_PROFILE)

    @property
    def active_mix(self) -> "mix.Mix | None":
        """The mixed test's profile when --tests has it, else None."""
        return self.load_mix() if mix.MIX_TEST in self.tests else None

    def n_for(self, test: str) -> tuple[int | None, ...]:
        """The n levels a test is measured at: (None,) for a test without n."""
        if test not in suite.N_TESTS:
            return (None,)
        return tuple(self.n_levels or (suite.DEFAULT_N[test],))

    @property
    def wrk_threads(self) -> int:
        return self.threads_for(self.connections)

    def threads_for(self, connections: int) -> int:
        return self.threads if self.threads is not None else default_threads(connections)

    @property
    def levels(self) -> tuple[int, ...]:
        """The client connection counts measured, in the order given."""
        return tuple(self.connection_levels or (self.connections,))

    def public(self) -> dict:
        """What results.json records: everything that shapes the numbers, no secrets."""
        d = {f.name: list(value) if isinstance(value := getattr(self, f.name), tuple)
             else value for f in fields(self)}
        for secret in ("postgres_dsn", "mysql_dsn"):
            d[secret] = bool(d[secret])
        d["token"] = "(default)" if self.token == Settings.token else "(custom)"
        d["threads"] = self.wrk_threads
        d["threads_requested"] = self.threads
        d["results_dir"] = str(self.results_dir)
        d["servers_dirs"] = [str(p) for p in self.servers_dirs]
        d["connection_levels"] = list(self.levels)
        for side in ("server", "client", "db"):
            d[f"{side}_cpus"] = self.cpus(side)
        # the defaults of --generator (wrk, and oha for --rate), --iterations, the
        # protocol flags, --server-memory and --mix record nothing: a run's settings stay
        # what every run before them recorded
        for name in ("generators", "iterations", "protocols", "streams", "tls_proxy",
                     "server_memory", "proxy_memory", "mix", "cold_build", "instructions",
                     "instructions_requests", "instructions_runs", "counter", "sizes",
                     "compression"):
            if getattr(self, name) == getattr(Settings, name):
                del d[name]
        if self.pipelined_depth is None:     # the depth shapes the pipelined test alone
            del d["pipeline"]
        return d


# what `public()` records that is not a field, or records in another form
_DERIVED = ("threads_requested",)


def from_public(stored: dict, *, token: str | None = None, postgres_dsn: str | None = None,
                mysql_dsn: str | None = None) -> Settings:
    """The Settings a stored run ran with (for --resume). What `public()` leaves out on
    purpose comes from the caller: a custom token, and the DSNs of external databases."""
    names = {f.name for f in fields(Settings)}
    given = {key: value for key, value in stored.items()
             if key in names and key not in _DERIVED}
    levels = stored.get("connection_levels") or [given.get("connections",
                                                           Settings.connections)]
    given.update(
        threads=stored.get("threads_requested"),
        token=Settings.token if stored.get("token") == "(default)" else (token or ""),
        postgres_dsn=postgres_dsn, mysql_dsn=mysql_dsn,
        results_dir=Path(stored["results_dir"]),
        servers_dirs=tuple(Path(p) for p in stored["servers_dirs"]),
        connection_levels=levels if len(levels) > 1 else None,
        **{f"{side}_cpus": format_cpu_list(stored[f"{side}_cpus"])
           if stored.get(f"{side}_cpus") else None for side in ("server", "client", "db")})
    return Settings(**given)


def parse_rate(text: str) -> tuple[str, float]:
    """("share", 0.5) for "50%", ("absolute", 2000.0) for "2000"; SelectionError else."""
    value = str(text).strip()
    try:
        if value.endswith("%"):
            share = float(value[:-1]) / 100
            if 0 < share <= 1:
                return "share", share
        elif float(value) > 0:
            return "absolute", float(value)
    except ValueError:
        pass
    raise SelectionError(f"--rate {text!r}: give a share of each case's measured maximum "
                         f"from 1% to 100% (e.g. 50%) or an absolute rate in req/s (e.g. 2000)")


def normalise_test(name: str) -> str:
    return name.strip().replace("_", " ").replace("-", " ").lower()


def validate(settings: Settings, server_ids: list[str], proxies: list[str] = ()) -> None:
    """Every setting checked before any long work starts; the error names the flag."""
    s = settings
    check_names("server", s.servers, sorted(server_ids))
    check_names("connection mode", s.connection_modes, list(CONNECTION_MODES))
    check_names("--behind proxy", s.behind, [NO_PROXY, *sorted(proxies)])
    for flag, values in (("connections", s.levels), ("connection-mode", s.connection_modes),
                         ("behind", s.behind), ("rate", s.rates),
                         ("generator", s.generators)):
        if len(set(values)) != len(values):
            raise SelectionError(f"--{flag} lists a value twice: {','.join(map(str, values))}")
    if any(level <= 0 for level in s.levels):
        raise SelectionError(f"--connections must be positive, got {','.join(map(str, s.levels))}")
    for rate in s.rates:
        parse_rate(rate)
    validate_generators(s)
    # a proxy's declared protocols are read only when a protocol besides h1 is asked for
    declared = {} if tuple(s.protocols) == (protocols.DEFAULT,) else \
        {name: spec.protocols for name, spec in proxyspec.available_proxies().items()}
    for problem in protocols.problems(s.protocols, s.tests, s.rates, s.behind, declared,
                                      s.tls_proxy, s.streams, s.generators)[:1]:
        raise SelectionError(problem)
    generators = closed_loop_generators(s.generators) + \
        (open_model_generators(s.generators) if s.rates else [])
    for problem in (pipelining.problems(s.tests, s.pipeline, closed_loop_generators(
            s.generators), s.protocols, s.rates, s.connection_modes, s.burst)
            + workloads.generator_problems(s.tests, generators)
            + workloads.websocket_problems(s.tests, s.protocols, s.rates, s.connection_modes)
            + workloads.compression_problems(s.compression, s.tests, generators))[:1]:
        raise SelectionError(problem)
    if not s.knee_p99_ms > 0:
        raise SelectionError(f"--knee-p99 must be positive (ms), got {s.knee_p99_ms:g}")
    validate_placement(s)
    check_names("database", s.databases, list(KNOWN_DATABASES))
    check_names("test", s.tests, list(KNOWN_TESTS))
    mix.validate(s.tests, s.mix, closed_loop_generators(s.generators)
                 + (open_model_generators(s.generators) if s.rates else []))
    for why in (suite.level_problem(s.n_levels, s.tests),
                workloads.size_problem(s.sizes, s.tests)):
        if why:
            raise SelectionError(why)
    if s.runtime_threads not in RUNTIME_THREADS:
        raise SelectionError(f"unknown --runtime-threads {s.runtime_threads!r}; valid: "
                             f"{', '.join(RUNTIME_THREADS)}")
    if s.orm not in ORM_CHOICES:
        raise SelectionError(f"unknown --orm {s.orm!r}; valid: {', '.join(ORM_CHOICES)}")
    for flag, value in (("duration", s.duration), ("connections", s.connections),
                        ("workers", s.workers), ("db-connections", s.db_connections),
                        ("repeat", s.repeat), ("timeout", s.timeout)):
        if not value > 0:
            raise SelectionError(f"--{flag} must be positive, got {value}")
    if s.warmup < 0:
        raise SelectionError(f"--warmup must be 0 or more, got {s.warmup}")
    if s.burst < 0:
        raise SelectionError(f"--burst must be 0 or more seconds, got {s.burst}")
    if not 0 <= s.error_threshold < 1:
        raise SelectionError(f"--error-threshold must be a percentage from 0 to 100, "
                             f"got {s.error_threshold * 100:g}")
    if not 0 < s.foreign_cpu_limit < 1:
        raise SelectionError(f"--foreign-cpu-limit must be a percentage from 0 to 100 "
                             f"(exclusive), got {s.foreign_cpu_limit * 100:g}")
    if not 0 < s.unstable_cv < 1:
        raise SelectionError(f"--unstable-cv must be a percentage from 0 to 100 (exclusive), "
                             f"got {s.unstable_cv * 100:g}")
    if s.threads is not None:
        if s.threads <= 0:
            raise SelectionError(f"--threads must be positive, got {s.threads}")
        for level in s.levels:
            check_threads(s.threads, level)
    for flag, port in (("port", s.port), ("pg-port", s.pg_port), ("mysql-port", s.mysql_port),
                       ("port (+1, the upstream port behind a proxy)", s.upstream_port),
                       ("port (+2, verification's pipelining relay)", s.relay_port)):
        if not 1 <= port <= 65535:
            raise SelectionError(f"--{flag} must be a TCP port (1-65535), got {port}")
    counting.validate(s)
    if not s.token or any(c.isspace() for c in s.token):
        raise SelectionError("--token must be a non-empty string without whitespace")


def check_threads(threads: int, connections: int) -> None:
    if threads > connections:
        raise SelectionError(f"--threads {threads} exceeds --connections {connections}: "
                             f"wrk needs at least one connection per thread")
    if connections % threads:
        fits = [t for t in range(1, threads + 1) if connections % t == 0][-1]
        raise SelectionError(
            f"--connections {connections} does not divide over --threads {threads}: wrk "
            f"would open only {threads * (connections // threads)} connections. Use "
            f"--threads {fits}, or --connections {threads * -(-connections // threads)}")
