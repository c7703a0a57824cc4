"""One sample of a case: one measured window of one server under one load, and what the
harness knew of it. Its status moves only through the methods below:

    pending --(measured)--> ok | invalid | failed | verification failed
    pending --(the run stopped first)--> interrupted | failed

`interrupted` samples are measured again by `--resume` (so they move on like pending
ones); an `ok` sample may still become `invalid` or `failed` when a check after the
verdict refutes it (the rows of an update test, the server dying on the way out).

The figures a sample holds (summary, resources, checks, ...) are produced by the load
generators, the samplers and the judge; the record keeps them as those made them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from bench.storage import results
from bench.storage.record import Record, optional

# the statuses a continuation (--resume) measures
UNMEASURED = (results.PENDING, results.INTERRUPTED)


@dataclass(kw_only=True, slots=True)
class GeneratorRecord(Record):
    """The load generator as it ran the measured window (schema 2 stored it as "wrk",
    whichever generator ran)."""
    SCHEMA: ClassVar[str] = "#/$defs/generator"
    name: str                              # "wrk" (closed loop) or "oha" (open model)
    connection_close: bool = optional()    # a new TCP connection per request
    rate: dict | None = optional()         # open model: the rate asked for and achieved
    # HTTP/2 (h2load): concurrent streams per connection, and what its connections
    # negotiated (application protocols, TLS versions, ciphers)
    streams: int = optional()
    negotiated: dict = optional()
    # the pipelined test: requests per batch on each connection (wrk's Lua pipeline)
    pipeline: int = optional()
    # the websocket test (wsload): the bytes of each message
    message_bytes: int = optional()
    # always written; optional because schema 2 required only threads and connections
    command: list[str] = optional()
    exit_code: int | None = optional()
    client_cpu_s: float = optional()
    wall_s: float = optional()
    threads: int
    connections: int                       # the connections it really opened
    # schema 1 stored the connections asked for, not those opened: threads and
    # connections are then the run's settings
    connections_as_asked: bool = optional()


@dataclass(kw_only=True, slots=True)
class BurstRecord(Record):
    """The wave of new connections after the measured window (--burst)."""
    SCHEMA: ClassVar[str] = "#/$defs/burst"
    seconds: float
    summary: dict                          # the load generator's summary of the burst
    connections_opened: int                # TCP connections the server's host accepted


@dataclass(kw_only=True, slots=True)
class WorkerPids(Record):
    """A multi-process server's worker pids at the start and the end of the window."""
    SCHEMA: ClassVar[str] = "#/$defs/worker_pids"
    before: list[int] | None
    after: list[int] | None


@dataclass(kw_only=True, slots=True)
class MemoryCapRecord(Record):
    """--server-memory: the server's capped cgroup (bench.infra.agent.memcap.memcap_read)
    at its fullest reading in the measured window, with the OOM kills and the peak read at
    the window's end; MiB, None where the kernel gives no figure."""
    SCHEMA: ClassVar[str] = "#/$defs/memory_cap"
    limit_mb: float
    kind: str                              # "cgroup2 memory.max" or "cgroup v1 ..."
    oom_kills: int | None
    usage_mb: float | None
    peak_mb: float | None                  # the most it held since the server started
    anon_mb: float | None                  # the program's own (anonymous) memory
    file_mb: float | None                  # page cache charged to it
    sock_mb: float | None                  # kernel socket buffers
    kernel_mb: float | None                # other kernel memory


@dataclass(kw_only=True, slots=True)
class ServerProcessRecord(Record):
    """The server as it really ran. Every key is optional: schema 1 kept only some of the
    first three, and schema 2 added the others over time."""
    SCHEMA: ClassVar[str] = "#/$defs/server_process"
    workers: int = optional()
    pool_size: int = optional()
    concurrency: str = optional()          # "processes" or "threads"
    db_budget: dict | None = optional()    # the DB connection budget's split (infra)
    db_connections_seen: int | None = optional()
    client_connections: dict | None = optional()   # where the client's connections were
    worker_pids: WorkerPids | None = optional()
    cpus: list[int] | None = optional()    # the CPUs its first process could use
    memory_idle_mb: float | None = optional()      # its tree's memory once ready, unloaded
    memory_idle_kind: str | None = optional()      # pss (else uss / rss), as in resources
    memory_idle_split_mb: dict | None = optional()  # its parts: anon, file, shmem
    memory_cap: MemoryCapRecord | None = optional()   # --server-memory: its cgroup's account


@dataclass(kw_only=True, slots=True)
class SampleRecord(Record):
    SCHEMA: ClassVar[str] = "#/$defs/sample"
    index: int                             # 0-based repetition of its case
    round: int                             # the interleaved round it belongs to
    status: str = results.PENDING
    reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    started_at: str | None = None
    summary: dict | None = None            # the load generator's normalised summary
    warmup: dict | None = None             # the same, of the warm-up
    error_rate: float | None = None
    generator: GeneratorRecord | None = None
    resources: dict | None = None          # per group (server, database, client): figures
    server_process: ServerProcessRecord | None = None
    checks: dict = field(default_factory=dict)        # the judge's figures, update checks
    overhead_s: dict = field(default_factory=dict)    # the harness's own time per phase
    log: str | None = None                 # the server's log, relative to the run folder
    db_settle: dict | None = optional()    # the wait for the database's deferred work
    connections_opened: int = optional()   # TCP connections accepted during the window
    burst: BurstRecord = optional()
    log_tail: str | None = optional()      # the end of the log of a sample that went wrong
    noise: dict | None = optional()        # other processes' CPU and steal in the window
    proxy_memory_cap: MemoryCapRecord | None = optional()  # --proxy-memory: its cgroup's account

    @classmethod
    def pending(cls, index: int, rnd: int) -> "SampleRecord":
        """A sample still to be measured."""
        return cls(index=index, round=rnd)

    @property
    def unmeasured(self) -> bool:
        """Still to be measured by this run or a continuation of it."""
        return self.status in UNMEASURED

    # ------------------------------------------------------------- transitions
    def begin(self, at: str) -> None:
        self.started_at = at

    def mark_invalid(self, reason: str) -> None:
        """Measured, but the figure does not stand (errors, a check refuted it)."""
        self._become(results.INVALID, reason)

    def judged(self, valid: bool, reason: str | None) -> None:
        """The judge's verdict on the measured figures (its reason, if any, kept)."""
        self._become(results.OK if valid else results.INVALID, reason)

    def mark_failed(self, reason: str) -> None:
        """Not measured, or the measurement broke: the server, the generator, the run."""
        self._become(results.FAILED, reason)

    def mark_verification_failed(self, reason: str | None) -> None:
        self._become(results.VERIFICATION_FAILED, reason)

    def mark_interrupted(self, reason: str) -> None:
        self._become(results.INTERRUPTED, reason)

    def _become(self, status: str, reason: str | None) -> None:
        self.status, self.reason = status, reason

    def end_if_pending(self, status: str, reason: str) -> bool:
        """The run stops before this sample was measured: pending samples take `status`
        (interrupted or failed); any other keeps its own. Whether it changed."""
        if self.status != results.PENDING:
            return False
        {results.INTERRUPTED: self.mark_interrupted,
         results.FAILED: self.mark_failed}[status](reason)
        return True
