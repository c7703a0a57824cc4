"""One count of one case (`--instructions`): the server started under a counter, a warm-up
of the case's own requests, the counters zeroed, a fixed, seeded sequence of N of its
requests, the counters read; then an idle window, whose rate of clock-driven work is
taken off each process (bench.analysis.instructions.net). Each pass is a start of its
own:

    instructions   under the machine's instruction counter (callgrind, or perf)
    system calls   natively, strace attached to every process for the windows
    Python         a Python server's bytecodes per Python function, natively, its own
                   interpreter's tracer (where its instructions went, in Python's names)

A pass's sequence: ready -> warm-up (one connection, then closed and the server seen to
close its side) -> counter prepared (callgrind's instrumentation switched on: the
warm-up runs at valgrind's uninstrumented speed, several times faster, which a runtime
that needs 10,000 requests to compile its code welcomes) -> window opened -> N requests on a new connection ->
window closed (between two of them the server seen idle: Quiet) -> that connection
closed likewise -> idle window (bench.core.counting.IDLE_WINDOW_S) ->
stop. The server runs with one worker (bench.core.counting.COUNT_WORKERS says why).
Returns a CountRun; CountFailed says why there is none. Writes nothing but the counter's
files and the server's log in `folder`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from bench.analysis import instructions as figures
from bench.core.context import RunContext
from bench.core.counting import (COUNT_DB_CONNECTIONS, COUNT_WORKERS, WAIT_SYSCALLS,
                                 CountPlan)
from bench.core.plan import Case
from bench.infra import db
from bench.infra.counters import CounterError
from bench.infra.counters.python_profile import PythonProfile
from bench.infra.counters.strace import Strace
from bench.infra.lifecycle import running_server
from bench.infra.seam import Host
from bench.infra.server import ServerError
from bench.load import sequence
from bench.storage import results
from bench.storage.count import CountRun, PythonCount, SyscallCount

WARMUP_SEED_OFFSET = 1_000_003      # the warm-up's requests differ from the counted ones
# Between two counted requests the client waits until the server is idle: its threads
# have run for not one nanosecond over QUIET_SPAN_S (the scheduler's account,
# bench.infra.agent.procfs.run_ns). What a server does after an answer (a task's
# completion, a keep-alive timer re-armed, a runtime's threads spinning down) is then
# done before the next request arrives, never interleaved with it one way in one run and
# another way in the next: without it aiohttp's count moved 3.2 % between starts (the
# next request racing its post-response work), with it 0.07 %. A server that is never
# seen idle within QUIET_CAP_S (a JVM's own threads running by the clock) gets the next
# request anyway; how often is stored (`unquiet`).
QUIET_SPAN_S = 0.002
QUIET_CAP_S = 0.25
KEEP_FUNCTIONS = 200                # the stored table's functions, the largest first
CLOSE_TIMEOUT_S = 30.0              # for the server to close a connection the client closed


class CountFailed(RuntimeError):
    """A count that gave no figure; the message is the reason the results store."""


@dataclass
class Pass:
    """What one start under one counter gave."""
    window: list                    # ProcessCount per process, the counted window
    idle: list                      # ... the idle window after it
    seconds: dict
    connections: int
    unquiet: int                    # requests sent before the server was seen idle


class Quiet:
    """Called between two counted requests: returns once the server's processes have
    not run for QUIET_SPAN_S, or after QUIET_CAP_S (counted in `missed`)."""

    def __init__(self, host: Host, pids: list[int]):
        self.host, self.pids, self.missed = host, pids, 0

    def __call__(self) -> None:
        deadline = time.monotonic() + QUIET_CAP_S
        before = self.host.call("run_ns", pids=self.pids)
        while True:
            time.sleep(QUIET_SPAN_S)          # the span idleness is measured over
            now = self.host.call("run_ns", pids=self.pids)
            if now == before:
                return
            if time.monotonic() > deadline:
                self.missed += 1
                return
            before = now


class CaseCount:
    """Counts one case, run after run (each a fresh start of its server)."""

    def __init__(self, case: Case, context: RunContext, plan: CountPlan, *,
                 endpoint: db.Endpoint | None, host: Host, instructions: Callable,
                 syscalls: bool, on_phase: Callable[[str], None] = lambda name: None):
        """`instructions`: folder -> the instruction counter (bench.infra.counters);
        `syscalls`: whether strace is here."""
        self.case, self.context, self.plan = case, context, plan
        self.endpoint, self.host, self.on_phase = endpoint, host, on_phase
        self.make_counter, self.syscalls = instructions, syscalls
        spec = case.variant.server
        self.launch = replace(context.launch, workers=COUNT_WORKERS,
                              db_connections=COUNT_DB_CONNECTIONS)
        mix = context.load.mix
        self.warm = sequence.requests(case.test, spec.count.warmup,
                                      plan.seed + WARMUP_SEED_OFFSET, case.n, mix)
        self.counted = sequence.requests(case.test, plan.requests, plan.seed, case.n, mix)

    def run(self, folder: Path, relative_to: Path) -> CountRun:
        """One count, its files in `folder` (stored relative to `relative_to`)."""
        n = self.plan.requests
        at = results.now_iso()
        started = time.monotonic()
        first = self._pass(self.make_counter(folder / "instructions"), folder, "instructions")
        found = figures.net(first.window, first.idle)
        run = CountRun(at=at, instructions_per_request=round(found.net / n, 3),
                       instructions={"counted": found.counted,
                                     "background": round(found.background, 1),
                                     "net": round(found.net, 1)},
                       processes=found.processes,
                       functions=figures.per_request(found.parts, n, KEEP_FUNCTIONS),
                       seconds=first.seconds, connections=first.connections,
                       unquiet=first.unquiet,
                       profile=str((folder / "instructions").relative_to(relative_to)))
        if self.syscalls:
            run.syscalls = self._syscalls(folder, relative_to)
        if self.case.variant.server.language == "python":
            run.python = self._python(folder, relative_to)
        run.seconds["total"] = round(time.monotonic() - started, 2)
        return run

    def _syscalls(self, folder: Path, relative_to: Path) -> SyscallCount:
        where = folder / "syscalls"
        try:
            done = self._pass(Strace(self.host, where), folder, "syscalls")
        except (CountFailed, CounterError) as exc:
            return SyscallCount(method="strace", per_request=None, reason=str(exc)[:500])
        found, n = figures.net(done.window, done.idle), self.plan.requests
        waits = sum(v for k, v in found.parts.items() if k in WAIT_SYSCALLS)
        return SyscallCount(method="strace", per_request=round((found.net - waits) / n, 3),
                            waits=round(waits / n, 3),
                            by_name=figures.per_request(found.parts, n),
                            background=round(found.background / n, 3),
                            profile=str(where.relative_to(relative_to)))

    def _python(self, folder: Path, relative_to: Path) -> PythonCount:
        where = folder / "python"
        try:
            done = self._pass(PythonProfile(self.host, where), folder, "python")
        except (CountFailed, CounterError) as exc:
            return PythonCount(per_request=None, reason=str(exc)[:500])
        found, n = figures.net(done.window, done.idle), self.plan.requests
        return PythonCount(per_request=round(found.net / n, 3),
                           functions=figures.per_request(found.parts, n, KEEP_FUNCTIONS),
                           profile=str(where.relative_to(relative_to)))

    # ------------------------------------------------------------------ one start
    def _pass(self, counter, folder: Path, label: str) -> Pass:
        seconds: dict[str, float] = {}
        t0 = time.monotonic()
        self.on_phase(f"count: {label}")
        try:
            with running_server(self.case.variant, self.launch, self.endpoint,
                                folder / f"{label}.log", counter=counter, host=self.host,
                                on_phase=lambda name: self.on_phase(f"count {label}: {name}")
                                ) as running:
                server = running.server
                seconds["start"] = round(time.monotonic() - t0, 2)
                client = sequence.Client(self.launch.host, self.launch.port, self.plan.token)
                t = time.monotonic()
                self._check(client.send(self.warm), "the warm-up")
                self._closed(client)
                seconds["warmup"] = round(time.monotonic() - t, 2)
                counter.prepare(server.group.members())
                t = time.monotonic()
                members = server.group.members()
                quiet = Quiet(self.host, [p.pid for p in members])
                window = counter.open(members)
                try:
                    sent = client.send(self.counted, between=quiet)
                except BaseException:
                    window.abandon()          # no tool left attached (Ctrl-C, an error)
                    raise
                readings = window.close()
                seconds["window"] = round(time.monotonic() - t, 2)
                self._check(sent, "the counted sequence")
                self._closed(client)
                t = time.monotonic()
                resting = counter.open(server.group.members())
                try:
                    time.sleep(self.plan.idle_s)   # the idle window is a span of time itself
                except BaseException:
                    resting.abandon()
                    raise
                idle = resting.close()
                seconds["idle"] = round(time.monotonic() - t, 2)
                if not server.alive():
                    raise CountFailed(f"{server.exit_reason()} during the count")
        except ServerError as exc:
            raise CountFailed(f"{label}: {exc.reason}") from None
        except CounterError as exc:
            raise CountFailed(f"{label}: {exc}") from None
        seconds["pass"] = round(time.monotonic() - t0, 2)
        return Pass(readings, idle, seconds, sent.connections, quiet.missed)

    def _check(self, sent: sequence.Sent, what: str) -> None:
        if sent.errors:
            raise CountFailed(f"{sent.errors} of {sent.requests} requests of {what} got no "
                              f"2xx answer (first: {sent.first_error})")

    def _closed(self, client: sequence.Client) -> None:
        """The client's connection closed, and the server seen to close its side: its
        work for the close falls before the next window opens, never inside it."""
        client.close()
        deadline = time.monotonic() + CLOSE_TIMEOUT_S
        while self.host.call("held_connections", port=self.launch.port):
            if time.monotonic() > deadline:
                raise CountFailed(f"the server kept a connection the client had closed "
                                  f"open for {CLOSE_TIMEOUT_S:g} s")
            time.sleep(0.01)
