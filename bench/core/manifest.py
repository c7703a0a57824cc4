"""Reading `servers/<id>/manifest.toml`: what a server is, how to build and start it.

This is the only place that knows the manifest format (documented in servers/README.md);
the rest of the harness sees `ServerSpec` objects and never names a framework.
"""
from __future__ import annotations

import re
import signal
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bench.core import counting, protocols as protocol_names, suite
from bench.paths import SERVERS_DIR

KNOWN_DATABASES = ("postgres", "mysql")
CONCURRENCY = ("processes", "threads")
WORKER_COUNTS = ("processes", "threads", "none")


class ManifestError(ValueError):
    pass


class BudgetError(ValueError):
    """The DB connection budget cannot be split exactly over a server's processes."""


@dataclass(frozen=True)
class DbBudget:
    """How a server's DB connections are allotted: `per_process` in each of `processes`."""
    total: int
    processes: int
    per_process: int

    def as_dict(self) -> dict:
        return {"total": self.total, "processes": self.processes, "per_process": self.per_process}


@dataclass(frozen=True)
class WorkerCheck:
    """What the harness counts in a started server's process tree to see W workers.

    processes: descendant processes (not the root) whose command line (or, with
        match_in = "environment", one of whose environment lines) matches `match`;
    threads: threads of the tree whose name (/proc/<pid>/task/<tid>/comm) matches `match`;
    none: not countable from outside (`reason` says why, and the results say it too)."""
    count: str
    match: str = ""
    reason: str = ""
    match_in: str = "command"          # processes: "command" | "environment"


@dataclass(frozen=True)
class Toolchain:
    """What builds or runs the server, and the lowest version that can: `go >= 1.26`
    because go.mod says so. A machine without it leaves the server unavailable, with
    `reason`, instead of failing its build in the middle of a run.

    `fetches_newer_from`: the lowest version that fetches `minimum` by itself from a
    registry the project reaches (Go >= 1.21 downloads the toolchain go.mod names from
    the Go module proxy), so that an older one is still good enough."""
    command: str
    minimum: str
    reason: str
    fetches_newer_from: str = ""


# eq=False: a spec is loaded once per run and compared by identity, which also makes
# it (and the Variant holding it) hashable despite its dict fields
@dataclass(frozen=True, eq=False)
class ServerSpec:
    id: str
    dir: Path
    description: str
    language: str
    concurrency: str                 # "processes" | "threads"
    databases: tuple[str, ...]
    orm: tuple[bool, ...]
    build: tuple[str, ...]
    start: tuple[str, ...]
    env: dict = field(default_factory=dict)
    ready_timeout: float = 60.0
    notes: dict = field(default_factory=dict)
    stop_signal: str = "SIGTERM"     # sent to the whole process group to stop the server
    worker_check: WorkerCheck = WorkerCheck("processes", ".")
    # a reference, not a framework: the least possible work per request (e.g. nginx
    # answering from its config), measured as the ceiling the frameworks are shown against
    reference: bool = False
    # contract checks a reference server may fail, each with the reason (a reference does
    # the least work its tool allows; a framework must pass every check)
    exemptions: dict = field(default_factory=dict)
    # the HTTP workloads it cannot do in its production configuration: name -> why
    # ([unsupported]; servers/README.md "The HTTP workloads")
    unsupported: dict = field(default_factory=dict)
    # programs the server needs on PATH beyond its build (checked before a run starts)
    requires: tuple[str, ...] = ()
    toolchain: Toolchain | None = None
    # Set only by `ab`, which measures two versions of a server in one run: the version's
    # name ("A" baseline, "B" candidate), and where that version's builds go (two builds
    # of one server must not overwrite each other's binaries in one cache).
    arm: str = ""
    cache_dir: Path | None = None
    # Set by a release sweep (`--dep`, bench.core.deps): dependency -> the version this
    # version of the server is built with instead of its own pin (bench.infra.envs)
    deps: dict = field(default_factory=dict)
    # the database suite (bench.core.suite): how each (engine, orm) variant does its work;
    # None = the server does not implement the suite's endpoints
    suite: dict | None = None
    # for "threads": whether a runtime schedules the server's work over its threads
    # ("work-stealing": Go, tokio's multi-threaded runtime) or each thread runs an event
    # loop of its own that keeps its connections ("per-thread": actix), like a process
    scheduler: str = "per-thread"
    # the server's own unit tests (`make test`, bench/cli/unit_tests.py): commands run in
    # its folder, the first ones after its build when `after_build` (npm test needs the
    # node_modules the build installs)
    unit_tests: "UnitTests | None" = None
    # what runs, as paths with placeholders (a binary, a JAR, its own virtualenv, its
    # folder with node_modules): the build record's size (bench.session.session); empty =
    # nothing of its own (a server run by a system package's binaries)
    artefacts: tuple[str, ...] = ()
    # what the server speaks itself besides HTTP/1.1 over TCP (bench.core.protocols), on
    # a second listener the harness asks for (BENCH_PROTOCOL, servers/README.md); every
    # other protocol of a run reaches it through the terminating proxy
    protocols: tuple[str, ...] = ()
    # how `--instructions` counts it (bench.core.counting): countable here or why not, its
    # runtime's warm-up, the environment a count adds
    count: counting.CountSpec = field(default_factory=counting.CountSpec)

    def speaks(self, protocol: str) -> bool:
        """Whether the server answers `protocol` itself (h1: always)."""
        return protocol == "h1" or protocol in self.protocols

    @property
    def label(self) -> str:
        """What the server is called in a run: its id, or id@arm for a version of it in
        an A/B run. The server itself is told its id (BENCH_SERVER_ID)."""
        return f"{self.id}@{self.arm}" if self.arm else self.id

    def variants(self) -> list[tuple[str, bool]]:
        """(database, orm) pairs the server supports, in manifest order."""
        return [(d, o) for d in self.databases for o in self.orm]

    def declaration(self, database: str, orm: bool) -> "suite.Declaration | None":
        """What the manifest's [suite] says about one variant; None without the suite."""
        return None if self.suite is None else self.suite.get((database, orm))

    def workers_for(self, workers: int, runtime_threads: str, cpus: int) -> int:
        """W as this server runs it (the fairness rule, README "Fairness"): W processes
        for a process-based server; for a runtime that schedules its own work on threads
        (scheduler "work-stealing": Go, tokio), W threads, or with runtime_threads "cpus"
        (the default) as many threads as the CPUs it may use, at most W: a work-stealing
        scheduler oversubscribed on fewer cores loses throughput and tail latency to OS
        preemption (measured: gin with GOMAXPROCS 8 on 2 CPUs, 11-16 % fewer req/s and a
        27-45 % worse p99). W threads that each keep their own connections (actix) are W
        workers, as W processes are."""
        if self.scheduler == "work-stealing" and runtime_threads == "cpus":
            return max(1, min(workers, cpus))
        return workers

    def processes(self, workers: int) -> int:
        """Processes that each hold a pool of their own."""
        return workers if self.concurrency == "processes" else 1

    def budget(self, total: int, workers: int) -> DbBudget:
        """The budget split exactly over the processes, or BudgetError: an uneven split
        would silently drop connections (32 over 10 is 3 each, 30 in all), and a budget
        below the process count would silently exceed it (every pool needs one)."""
        processes = self.processes(workers)
        if total < processes:
            raise BudgetError(
                f"--db-connections {total} is less than {self.id}'s {processes} worker "
                f"processes, each of which needs a pool of at least one connection: use "
                f"--db-connections {processes} or more, or fewer --workers")
        if total % processes:
            lower, upper = total - total % processes, total + processes - total % processes
            raise BudgetError(
                f"--db-connections {total} does not split evenly over {self.id}'s "
                f"{processes} worker processes ({total // processes} each would open only "
                f"{lower}): use a multiple of {processes}, such as {lower} or {upper}")
        return DbBudget(total, processes, total // processes)

    def pool_size(self, budget: int, workers: int) -> int:
        """DB connections per process (see `budget`)."""
        return self.budget(budget, workers).per_process


def _require(data: dict, key: str, kind: type, path: Path):
    if key not in data:
        raise ManifestError(f"{path}: missing key {key!r}")
    if not isinstance(data[key], kind):
        raise ManifestError(f"{path}: {key!r} must be a {kind.__name__}")
    return data[key]


def _stop_signal(name: str, path: Path) -> str:
    if not isinstance(name, str) or not isinstance(getattr(signal, name, None), signal.Signals):
        raise ManifestError(f"{path}: stop_signal {name!r} is not a signal name such as SIGTERM")
    return name


def _worker_check(data: dict, concurrency: str, path: Path) -> WorkerCheck:
    """[workers] count/match/reason; by default a process server's every descendant
    process is a worker, and a threaded server must say which threads are."""
    table = data.get("workers", {})
    if not isinstance(table, dict):
        raise ManifestError(f"{path}: [workers] must be a table")
    count = table.get("count", concurrency)
    if count not in WORKER_COUNTS:
        raise ManifestError(f"{path}: [workers] count must be one of {WORKER_COUNTS}")
    match, reason = str(table.get("match", "." if count == "processes" else "")), \
        str(table.get("reason", ""))
    if count == "threads" and not match:
        raise ManifestError(f"{path}: [workers] count = 'threads' needs 'match', a regular "
                            "expression for the worker threads' names")
    if count == "none" and not reason:
        raise ManifestError(f"{path}: [workers] count = 'none' needs a 'reason'")
    try:
        re.compile(match)
    except re.error as exc:
        raise ManifestError(f"{path}: [workers] match {match!r}: {exc}") from exc
    match_in = table.get("match_in", "command")
    if match_in not in ("command", "environment"):
        raise ManifestError(f"{path}: [workers] match_in must be 'command' or 'environment'")
    return WorkerCheck(count, match, reason, match_in)


def _reference(data: dict, databases: tuple, path: Path) -> bool:
    reference = data.get("reference", False)
    if not isinstance(reference, bool):
        raise ManifestError(f"{path}: 'reference' must be true or false")
    if reference and databases:
        raise ManifestError(f"{path}: a reference server answers the tests without a "
                            f"database; 'databases' must be empty")
    return reference


def _exemptions(data: dict, path: Path) -> dict:
    table = data.get("exemptions", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) and v for v in table.values()):
        raise ManifestError(f"{path}: [exemptions] maps a verification check's name to the "
                            f"reason it does not apply")
    if table and not data.get("reference", False):
        raise ManifestError(f"{path}: only a reference server may be exempt from contract "
                            f"checks; a framework must pass all of them")
    return dict(table)


# what a manifest may declare unsupported: the HTTP workloads (the contract's endpoints
# and the database suite every server has, or declares by [suite])
# ("compression.br": that encoding alone, where the server's compressor has only gzip)
UNSUPPORTABLE = ("pipelined", "static", "upload", "delay", "websocket", "compression", "compression.gzip",
                 "compression.br")


def _unsupported(data: dict, path: Path) -> dict:
    table = data.get("unsupported", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) and v.strip()
                                              for v in table.values()):
        raise ManifestError(f"{path}: [unsupported] maps an HTTP workload to why this "
                            f"server cannot do it in its production configuration")
    unknown = sorted(set(table) - set(UNSUPPORTABLE))
    if unknown:
        raise ManifestError(f"{path}: [unsupported] names {', '.join(unknown)}; it may name "
                            f"{', '.join(UNSUPPORTABLE)}")
    return dict(table)


@dataclass(frozen=True)
class UnitTests:
    """[unit_tests] of a manifest: `commands` (argv lists, placeholders {servers_dir} and
    {cache_dir}) run in the server's folder; `after_build`: build the server first."""
    commands: tuple[tuple[str, ...], ...]
    after_build: bool = False


def _unit_tests(data: dict, path: Path) -> UnitTests | None:
    table = data.get("unit_tests")
    if table is None:
        return None
    commands = table.get("commands") if isinstance(table, dict) else None
    if not commands or not all(isinstance(c, list) and c and all(isinstance(a, str) for a in c)
                               for c in commands):
        raise ManifestError(f"{path}: [unit_tests] needs commands = [[\"argv\", ...], ...]")
    return UnitTests(tuple(tuple(c) for c in commands), bool(table.get("after_build", False)))


def parse_toolchain(data: dict, path: Path) -> Toolchain | None:
    """[toolchain] of a server's manifest.toml or a proxy's proxy.toml (bench.infra.proxy)."""
    table = data.get("toolchain")
    if table is None:
        return None
    if not isinstance(table, dict):
        raise ManifestError(f"{path}: [toolchain] must be a table")
    missing = [k for k in ("command", "minimum", "reason") if not str(table.get(k, ""))]
    if missing:
        raise ManifestError(f"{path}: [toolchain] needs {', '.join(missing)} (the command "
                            f"that builds or runs the server, its lowest working version, "
                            f"and why that one)")
    for key in ("minimum", "fetches_newer_from"):
        if key in table and not re.fullmatch(r"\d+(\.\d+)*", str(table[key])):
            raise ManifestError(f"{path}: [toolchain] {key} must be a version such as "
                                f"1.26, not {table[key]!r}")
    return Toolchain(str(table["command"]), str(table["minimum"]), str(table["reason"]),
                     str(table.get("fetches_newer_from", "")))


def _suite(data: dict, databases: tuple, path: Path) -> dict | None:
    if "suite" in data and not databases:
        raise ManifestError(f"{path}: [suite] needs a database; 'databases' is empty")
    try:
        return suite.parse(data.get("suite"), path)
    except suite.DeclarationError as exc:
        raise ManifestError(str(exc)) from exc


SCHEDULERS = ("per-thread", "work-stealing")


def _scheduler(data: dict, concurrency: str, path: Path) -> str:
    scheduler = data.get("scheduler", "per-thread")
    if scheduler not in SCHEDULERS:
        raise ManifestError(f"{path}: scheduler must be one of {SCHEDULERS}, got {scheduler!r}")
    if scheduler == "work-stealing" and concurrency != "threads":
        raise ManifestError(f"{path}: scheduler = \"work-stealing\" needs concurrency = \"threads\"")
    return scheduler


def _protocols(data: dict, path: Path) -> tuple[str, ...]:
    found = data.get("protocols", [])
    DEFAULT, PROTOCOLS = protocol_names.DEFAULT, protocol_names.PROTOCOLS
    if not isinstance(found, list) or any(p not in PROTOCOLS or p == DEFAULT for p in found):
        raise ManifestError(f"{path}: protocols lists what the server speaks natively besides "
                            f"h1, among {', '.join(p for p in PROTOCOLS if p != DEFAULT)}; "
                            f"got {found!r}")
    if found and not str(data.get("notes", {}).get("protocols", "")):
        raise ManifestError(f"{path}: protocols = {found!r} needs notes.protocols: the library "
                            f"that does it and its settings (ALPN, cipher suite, session "
                            f"resumption, concurrent streams)")
    return tuple(found)


def read_toml(path: Path) -> dict:
    """A manifest.toml or proxy.toml as a dict; a syntax error is a ManifestError naming it."""
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: {exc}") from exc


def load_manifest(folder: Path) -> ServerSpec:
    path = folder / "manifest.toml"
    data = read_toml(path)
    server_id = _require(data, "id", str, path)
    if server_id != folder.name:
        raise ManifestError(f"{path}: id {server_id!r} must equal the folder name {folder.name!r}")
    concurrency = _require(data, "concurrency", str, path)
    if concurrency not in CONCURRENCY:
        raise ManifestError(f"{path}: concurrency must be one of {CONCURRENCY}")
    databases = tuple(_require(data, "databases", list, path))
    unknown = set(databases) - set(KNOWN_DATABASES)
    if unknown:
        raise ManifestError(f"{path}: unknown databases {sorted(unknown)}; known: {KNOWN_DATABASES}")
    start = tuple(_require(data, "start", list, path))
    if not start:
        raise ManifestError(f"{path}: 'start' must not be empty")
    return ServerSpec(
        id=server_id, dir=folder.resolve(),
        description=data.get("description", ""), language=data.get("language", ""),
        concurrency=concurrency, scheduler=_scheduler(data, concurrency, path),
        databases=databases,
        orm=tuple(bool(o) for o in data.get("orm", [False])),
        build=tuple(data.get("build", [])), start=start,
        env={k: str(v) for k, v in data.get("env", {}).items()},
        ready_timeout=float(data.get("ready_timeout", 60)),
        notes=data.get("notes", {}),
        stop_signal=_stop_signal(data.get("stop_signal", "SIGTERM"), path),
        worker_check=_worker_check(data, concurrency, path),
        reference=_reference(data, databases, path),
        exemptions=_exemptions(data, path),
        unsupported=_unsupported(data, path),
        requires=tuple(str(t) for t in data.get("requires", [])),
        toolchain=parse_toolchain(data, path),
        suite=_suite(data, databases, path),
        unit_tests=_unit_tests(data, path),
        artefacts=tuple(str(a) for a in data.get("artefacts", [])),
        protocols=_protocols(data, path),
        count=_count(data, path),
    )


def _count(data: dict, path: Path) -> counting.CountSpec:
    try:
        return counting.parse_spec(data.get("instructions"), path)
    except counting.CountSpecError as exc:
        raise ManifestError(str(exc)) from exc


def discover(servers_dirs: list[Path] | None = None) -> dict[str, ServerSpec]:
    """Every folder with a manifest.toml, by id (sorted). Later folders may add servers."""
    specs: dict[str, ServerSpec] = {}
    for root in servers_dirs or [SERVERS_DIR]:
        for manifest in sorted(Path(root).glob("*/manifest.toml")):
            spec = load_manifest(manifest.parent)
            specs[spec.id] = spec
    return specs


def expand(template: str, values: dict[str, str]) -> str:
    """Fill `{placeholder}`s; an unknown one is a manifest error, not a KeyError."""
    try:
        return template.format(**values)
    except KeyError as exc:
        raise ManifestError(f"unknown placeholder {exc} in {template!r}; "
                            f"known: {sorted(values)}") from exc
