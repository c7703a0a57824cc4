"""The run record: the whole of results.json, typed, and the only code that writes it.

    RunRecord           the run: settings, load, environment, databases, builds, servers,
                        verification, schedule, its cases (bench.storage.case), ...
      LoadRecord        the load generators as they will run (LoadLevel, OpenModel, Placement)
      BuildRecord       one server's build
      ServerInfo        one server's description and dependency versions
      Schedule          the sample order
      Continuation      one --resume or --rerun-failed of the run

Its status moves only through its methods: `start` (running), `complete`, and `interrupt`
or `fail` when the run stops before its schedule does; the samples still pending then
take the same status. The runner's Ctrl-C and failure paths and the reaper of harnesses
killed with SIGKILL (bench.infra.state) all go through them.

Some blocks are kept as their producers made them, because those modules own their keys:
`settings` (bench.core.settings.public), `environment` and each continuation's `git`
(bench.infra.environment), `topology` (bench.infra.topology), each database's entry (its
endpoint, mode, version, restarts and, in docker mode, its image and the docker versions:
bench.infra.databases.docker.describe) and each verification report (bench.verify).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, ClassVar, Iterator

from bench.storage import results
from bench.storage.case import CaseRecord
from bench.storage.record import ABSENT, Record, RecordError, optional
from bench.storage.sample import SampleRecord


@dataclass(kw_only=True, slots=True)
class LoadLevel(Record):
    """One connection level of a sweep, as the closed-loop generator runs it."""
    SCHEMA: ClassVar[str] = "#/$defs/load_level"
    connections: int                       # what it really opens
    threads: int
    connections_requested: int


@dataclass(kw_only=True, slots=True)
class OpenModel(Record):
    """The open-model generator and the rates asked for (--rate)."""
    SCHEMA: ClassVar[str] = "#/$defs/open_model"
    generator: str
    version: str | None
    rates: list[str]
    knee_p99_ms: float


@dataclass(kw_only=True, slots=True)
class Placement(Record):
    """The CPUs each side was pinned to (None: not pinned)."""
    SCHEMA: ClassVar[str] = "#/$defs/placement"
    server: list[int] | None
    client: list[int] | None
    db: list[int] | None


@dataclass(kw_only=True, slots=True)
class LoadRecord(Record):
    """The load generators as they will run; the first connection level also at the top,
    as runs before sweeps stored it."""
    SCHEMA: ClassVar[str] = "#/$defs/load"
    generator: str
    version: str | None = optional()       # schema 1 did not record it
    threads: int | None
    connections: int
    # always written; optional because schema 2 added them over time
    connections_requested: int = optional()
    levels: list[LoadLevel] = optional()
    connection_modes: list[str] = optional()
    behind: list[str] = optional()
    placement: Placement = optional()
    open_model: OpenModel = optional()     # only with --rate


@dataclass(kw_only=True, slots=True)
class BuildRecord(Record):
    SCHEMA: ClassVar[str] = "#/$defs/build"
    ok: bool
    seconds: float
    error: str | None
    # what runs (the manifest's `artefacts`) once built: path -> MiB (None: missing), and
    # their sum
    artefacts: dict | None = optional()
    size_mb: float | None = optional()
    # --cold-build: the same build first from nothing cached (bench.infra.cold); `seconds`
    # is then the warm build right after it
    cold_seconds: float | None = optional()

    @classmethod
    def succeeded(cls, seconds: float, artefacts: dict | None = None,
                  cold_seconds: float | None = None) -> "BuildRecord":
        cold = {} if cold_seconds is None else {"cold_seconds": round(cold_seconds, 2)}
        if not artefacts:
            return cls(ok=True, seconds=round(seconds, 2), error=None, **cold)
        found = [v for v in artefacts.values() if v is not None]
        return cls(ok=True, seconds=round(seconds, 2), error=None, artefacts=artefacts,
                   size_mb=round(sum(found), 2) if len(found) == len(artefacts) else None,
                   **cold)

    @classmethod
    def failed(cls, error: str) -> "BuildRecord":
        return cls(ok=False, seconds=0, error=error)


@dataclass(kw_only=True, slots=True)
class ServerInfo(Record):
    """Every key is always written; all are optional because schema 2 did not describe
    this block (and `reference` came later)."""
    SCHEMA: ClassVar[str] = "#/$defs/server"
    description: str = optional()
    language: str = optional()
    concurrency: str = optional()
    reference: bool = optional()
    versions: dict = optional()            # direct dependency -> version, from lock files


@dataclass(kw_only=True, slots=True)
class Schedule(Record):
    """Every key is always written; all are optional because schema 2 required none."""
    SCHEMA: ClassVar[str] = "#/$defs/schedule"
    order_seed: int | None = optional()
    rounds: int = optional()
    order: list[str] = optional()          # "<case id>#<sample index>", in measuring order


@dataclass(kw_only=True, slots=True)
class Continuation(Record):
    SCHEMA: ClassVar[str] = "#/$defs/continuation"
    kind: str                              # "resume" or "rerun-failed"
    at: str
    samples: int                           # how many it set out to measure
    previous_status: str
    git: dict | None                       # the code it ran with (bench.infra.environment)


@dataclass(kw_only=True, slots=True)
class NotSupported(Record):
    """A test a server's manifest says it cannot do ([unsupported]): left out, with why."""
    SCHEMA: ClassVar[str] = "#/$defs/not_supported"
    server: str
    test: str
    reason: str


@dataclass(kw_only=True, slots=True)
class RunRecord(Record):
    SCHEMA: ClassVar[str] = "#"
    schema_version: int = results.SCHEMA_VERSION
    migrated_from: int = optional()        # the schema version it was first stored with
    run_id: str
    status: str = results.RUNNING
    reason: str | None = None
    started_at: str
    finished_at: str | None = None
    settings: dict                         # as asked for (bench.core.settings.public)
    load: LoadRecord
    environment: dict
    databases: dict[str, dict] = field(default_factory=dict)
    builds: dict[str, BuildRecord] = field(default_factory=dict)
    servers: dict[str, ServerInfo] = field(default_factory=dict)
    unavailable: dict[str, str] = optional()   # server id -> why it was left out
    # the HTTP workloads a server's manifest says it cannot do: {server, test, reason}
    not_supported: list[NotSupported] = optional()
    verification: dict[str, dict] = field(default_factory=dict)
    schedule: Schedule
    cases: list[CaseRecord] = field(default_factory=list)
    topology: dict = optional()            # which machine ran each role
    continuations: list[Continuation] = optional()
    cleanup_problems: list[str] = optional()   # what the databases' teardown left behind
    ab: dict = optional()                  # an A/B run's versions and pairs (bench.runner.ab)

    def __post_init__(self):
        if self.schema_version != results.SCHEMA_VERSION:
            raise RecordError(f"RunRecord: schema version {self.schema_version}; "
                              f"bench.storage.migrate brings a document to "
                              f"{results.SCHEMA_VERSION} first")

    @classmethod
    def new(cls, *, run_id: str, settings: dict, environment: dict, load: LoadRecord,
            schedule: Schedule, cases: list[CaseRecord], servers: dict[str, ServerInfo],
            topology: dict | None = None,
            unavailable: dict[str, str] | None = None,
            not_supported: list[dict] | None = None) -> "RunRecord":
        """A run about to start, every sample pending."""
        run = cls(run_id=run_id, started_at=results.now_iso(), settings=settings,
                  load=load, environment=environment, servers=servers, schedule=schedule,
                  cases=cases)
        if topology is not None:
            run.topology = topology
        if unavailable:
            run.unavailable = dict(unavailable)
        if not_supported:
            run.not_supported = [NotSupported(**left) for left in not_supported]
        return run

    # ------------------------------------------------------------- reading
    def case(self, case_id: str) -> CaseRecord:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    def all_samples(self) -> Iterator[SampleRecord]:
        """Every case's current samples (not those kept as history)."""
        for case in self.cases:
            yield from case.samples

    def samples_to_measure(self) -> int:
        return sum(1 for s in self.all_samples() if s.unmeasured)

    def counts_to_make(self) -> int:
        """--instructions' counts not made yet (pending, or interrupted)."""
        return sum(1 for c in self.cases if c.instructions and not c.instructions.done)

    # ------------------------------------------------------------- transitions
    def start(self) -> None:
        """A sitting begins (a new run, or a continuation of a stored one)."""
        self.status, self.reason = results.RUNNING, None

    def complete(self) -> None:
        self.status = results.COMPLETE

    def interrupt(self, reason: str, sample_reason: str) -> None:
        """Stopped before its schedule ended (Ctrl-C, SIGTERM, a harness killed): the
        pending samples become interrupted; `--resume` measures them later."""
        self._stop(results.INTERRUPTED, reason, sample_reason)

    def fail(self, reason: str, sample_reason: str) -> None:
        """An error that ends the whole run: the pending samples failed with it."""
        self._stop(results.FAILED, reason, sample_reason)

    def _stop(self, status: str, reason: str, sample_reason: str) -> None:
        self.status, self.reason = status, reason
        for sample in self.all_samples():
            sample.end_if_pending(status, sample_reason)
        for case in self.cases:                  # --instructions' counts not made yet
            if case.instructions and not case.instructions.done:
                case.instructions.interrupted(sample_reason)

    def finish(self, at: str) -> None:
        """The sitting ended (whatever its status)."""
        self.finished_at = at

    def continued(self, kind: str, at: str, git: dict | None) -> None:
        """A --resume or --rerun-failed reopens the run (recorded before it starts)."""
        if self.continuations is ABSENT:
            self.continuations = []
        self.continuations.append(Continuation(kind=kind, at=at,
                                               samples=self.samples_to_measure(),
                                               previous_status=self.status, git=git))

    def derived(self, data: dict) -> None:
        """Take each case's status, reason, warnings and stats from `data`, this record's
        JSON form after bench.analysis.statistics.refresh derived them from the samples."""
        for case, stored in zip(self.cases, data["cases"], strict=True):
            case.derived(stored["status"], stored["reason"], stored["warnings"],
                         stored["stats"])

    # ------------------------------------------------------------- storing
    def save(self, run_dir: Path, derive: Callable[[dict], object] | None = None) -> dict:
        """Validate and write results.json (bench.storage.results.save); `derive`, given
        the JSON form, fills in the cases' derived figures first, and the record takes
        them. Returns the JSON form as stored."""
        data = self.to_json()
        if derive is not None:
            derive(data)
            self.derived(data)
        results.save(data, run_dir)
        return data


def load_run(path: Path) -> RunRecord:
    """The run stored at `path` (a run folder or its results.json), migrated to the
    current schema."""
    return RunRecord.from_json(results.load(path))
