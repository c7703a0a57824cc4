"""Instructions under valgrind's callgrind.

The server starts under `valgrind --tool=callgrind --trace-children=yes`, so every process
it forks or execs is counted too, with instrumentation off (`--instr-atstart=no`): a
process then runs valgrind's core alone, several times faster than instrumented, so the
start-up and the warm-up nobody counts cost seconds, not minutes. Each process gets, through vgdb (the
gdbserver monitor commands callgrind_control sends, asked of one pid at a time so each
window's seconds are the process's own):

    instrumentation on   after the warm-up (which needs no counting), before the window
    zero                 the window opens
    dump                 the window closes: callgrind.out.<pid>.<k> in the count's folder

Why callgrind and not cachegrind: callgrind zeroes and dumps a running process, so one
start gives the warm-up, the counted window and the idle window; cachegrind (valgrind
3.19) counts from the start to the exit only, so a count would take two starts with two
request counts and the difference of their totals. callgrind's dumps also keep the
calls, so a profile opens in KCachegrind with its call graph.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

from bench.infra.counters import CounterError, LocalCounter, ProcessCount
from bench.infra.counters.callgrind_files import CallgrindFileError, read
from bench.infra.seam import Host, ProcessRef

VGDB_TIMEOUT_S = 60.0      # a process busy in a long basic block answers within seconds
TOOL_MARK = "--tool=callgrind"


class Callgrind(LocalCounter):
    method = name = "callgrind"
    # readiness waits this many times the manifest's ready_timeout: valgrind runs the
    # start-up, uninstrumented, 5-10 times slower (sanic: 16 s to /ping/ under it)
    slowdown = 10

    def __init__(self, host: Host, folder: Path, extra: tuple[str, ...] = ()):
        """`folder`: where the processes' dumps go (the count's own, in the run folder)."""
        super().__init__(host, folder)
        self.extra = tuple(extra)

    def wrap(self, argv: list[str]) -> list[str]:
        return ["valgrind", f"--tool=callgrind", "--trace-children=yes",
                "--instr-atstart=no", f"--callgrind-out-file={self.folder}/callgrind.out.%p",
                *self.extra, *argv]

    def prepare(self, processes: list[ProcessRef]) -> None:
        for ref in self._counted(processes):
            self._vgdb(ref, "instrumentation", "on")

    def open(self, processes: list[ProcessRef]) -> "CallgrindWindow":
        counted = self._counted(processes)
        opened = {}
        for ref in counted:
            self._vgdb(ref, "zero")
            opened[ref.pid] = (ref, time.monotonic())
        return CallgrindWindow(self, opened)

    # ---------------------------------------------------------------- the parts
    def _counted(self, processes: list[ProcessRef]) -> list[ProcessRef]:
        """The tree's processes, each of which must run under callgrind: one that does
        not (a program valgrind was told to skip, one started outside the tree's
        valgrind) would leave its instructions out of the count unsaid."""
        out = []
        for ref in processes:
            command = self.host.command_line(ref)
            if not command:
                continue                  # gone meanwhile
            if TOOL_MARK not in command:
                raise CounterError(f"process {ref.pid} of the server does not run under "
                                   f"callgrind, so its instructions would not be counted: "
                                   f"{command[:200]}")
            out.append(ref)
        if not out:
            raise CounterError("no process of the server runs under callgrind")
        return out

    def _vgdb(self, ref: ProcessRef, *command: str) -> None:
        done = self.host.run(["vgdb", f"--pid={ref.pid}", *command], timeout=VGDB_TIMEOUT_S)
        if done.timed_out or done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            raise CounterError(f"vgdb {' '.join(command)} for process {ref.pid} "
                               f"{'timed out' if done.timed_out else f'exited {done.returncode}'}"
                               f": {said[-1][:200] if said else 'no output'}")

    def dumps(self, pid: int) -> list[Path]:
        """The process's dumps so far, in order (callgrind.out.<pid>.<k>)."""
        found = []
        for path in self.folder.glob(f"callgrind.out.{pid}.*"):
            match = re.fullmatch(rf"callgrind\.out\.{pid}\.(\d+)", path.name)
            if match:
                found.append((int(match.group(1)), path))
        return [p for _, p in sorted(found)]


class CallgrindWindow:
    def __init__(self, counter: Callgrind, opened: dict[int, tuple[ProcessRef, float]]):
        self.counter, self.opened = counter, opened

    def abandon(self) -> None:
        """Nothing runs beside the server: its counts are left where they are."""

    def close(self) -> list[ProcessCount]:
        out = []
        for pid, (ref, since) in self.opened.items():
            before = set(self.counter.dumps(pid))
            self.counter._vgdb(ref, "dump")
            seconds = time.monotonic() - since
            new = [p for p in self.counter.dumps(pid) if p not in before]
            if not new:
                raise CounterError(f"callgrind wrote no dump for process {pid}")
            try:
                profile = read(new[-1])
            except CallgrindFileError as exc:
                raise CounterError(str(exc)) from exc
            out.append(ProcessCount(pid, profile.command, float(profile.total), seconds,
                                    {k: float(v) for k, v in profile.functions.items()},
                                    str(new[-1])))
        return out
