"""A case's count (`--instructions`): instructions and system calls per request, each run
of it a fresh start of the server under a counter (bench.runner.count).

    CountRecord        the case's count: its status, the method, N and the settings it
                       ran with, and its runs
      CountRun         one start: instructions per request and where they went
        SyscallCount   the same requests' system calls, by name (strace)
        PythonCount    a Python server's bytecodes per Python function

Its status moves through its methods:

    (absent) --planned--> pending --run ok--> ... --all runs--> ok
                          pending --a run failed--> failed
                          pending --the runtime cannot be counted here--> not countable
                          pending --the run stopped first--> interrupted

Figures are per request; totals are of the counted window, with the background (what the
processes executed per second while idle, times the window's seconds) taken off.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from bench.storage import results
from bench.storage.record import Record, optional

NOT_COUNTABLE = "not countable"
COUNT_STATUSES = (results.OK, results.FAILED, NOT_COUNTABLE, results.INTERRUPTED,
                  results.PENDING)


@dataclass(kw_only=True, slots=True)
class SyscallCount(Record):
    SCHEMA: ClassVar[str] = "#/$defs/syscall_count"
    method: str                            # "strace"
    # per request, without the calls that wait (bench.core.counting.WAIT_SYSCALLS): the
    # figure judged; None: the count of system calls failed
    per_request: float | None
    waits: float = 0.0                     # per request, the calls that wait
    by_name: dict[str, float] = field(default_factory=dict)   # every syscall, per request
    background: float = 0.0                # per request, taken off (idle rate x window)
    reason: str | None = None              # why per_request is None
    profile: str | None = None             # the folder of its summaries, in the run's


@dataclass(kw_only=True, slots=True)
class PythonCount(Record):
    SCHEMA: ClassVar[str] = "#/$defs/python_count"
    per_request: float | None              # bytecodes per request; None: the profile failed
    functions: dict[str, float] = field(default_factory=dict)  # "module.qualname (file:line)"
    reason: str | None = None
    profile: str | None = None


@dataclass(kw_only=True, slots=True)
class CountRun(Record):
    SCHEMA: ClassVar[str] = "#/$defs/count_run"
    at: str                                # when its server started
    instructions_per_request: float
    instructions: dict                     # counted, background, net: the window's totals
    # one entry per process: pid, command, counted, background, net, seconds
    processes: list[dict] = field(default_factory=list)
    # the functions with the most instructions per request (net of the idle window's);
    # callgrind only
    functions: dict[str, float] = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)   # start, warmup, window, idle, total
    connections: int = 1                   # TCP connections the sequence opened
    # requests sent before the server was seen idle after the one before (within
    # bench.runner.count.QUIET_CAP_S)
    unquiet: int = 0
    profile: str | None = None             # its folder in the run's (the counter's files)
    syscalls: SyscallCount = optional()
    python: PythonCount = optional()


@dataclass(kw_only=True, slots=True)
class CountRecord(Record):
    SCHEMA: ClassVar[str] = "#/$defs/count"
    status: str = results.PENDING
    reason: str | None = None
    key: str                               # what the count stands for (counting.count_key)
    method: str | None                     # "callgrind" or "perf"; None: no counter here
    tool: str | None                       # its version
    requests: int                          # N, counted per run
    warmup: int                            # requests before the counters were zeroed
    workers: int
    seed: int
    planned_runs: int
    # what the counted starts add to the server's environment (the runtime's and the
    # manifest's [instructions] env: a fixed hash seed, a Go runtime setting)
    environment: dict = field(default_factory=dict)
    # the counted starts' command when the manifest gives one ([instructions] start: the
    # runtime's flags that make it repeatable); absent: the manifest's start
    command: list[str] = optional()
    runs: list[CountRun] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def planned(cls, *, key: str, method: str | None, tool: str | None, requests: int,
                warmup: int, workers: int, seed: int, runs: int,
                environment: dict | None = None,
                command=None) -> "CountRecord":
        record = cls(key=key, method=method, tool=tool, requests=requests, warmup=warmup,
                     workers=workers, seed=seed, planned_runs=runs,
                     environment=dict(environment or {}))
        if command:
            record.command = list(command)
        return record

    @property
    def done(self) -> bool:
        return self.status in (results.OK, results.FAILED, NOT_COUNTABLE)

    def counted(self, run: CountRun) -> None:
        self.runs.append(run)
        if len(self.runs) >= self.planned_runs:
            self.status, self.reason = results.OK, None

    def failed(self, reason: str) -> None:
        self.status, self.reason = results.FAILED, reason[:500]

    def not_countable(self, reason: str) -> None:
        self.status, self.reason = NOT_COUNTABLE, reason[:500]

    def interrupted(self, reason: str) -> None:
        if not self.done:
            self.status, self.reason = results.INTERRUPTED, reason

    def recount(self) -> None:
        """--rerun-failed: a failed count is made again, from its first run."""
        self.status, self.reason, self.runs = results.PENDING, None, []

    def values(self) -> list[float]:
        """Instructions per request of each run (only an ok count has figures)."""
        if self.status != results.OK:
            return []
        return [r.instructions_per_request for r in self.runs]
