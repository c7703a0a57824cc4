"""Counters: what a server's processes executed over a window of requests, per process.

A count (bench.runner.count) opens a window on every process of a started server's tree,
sends its requests, and closes the window; each counter gives one `ProcessCount` per
process: the events counted, the seconds the window stayed open on it, and what the
counter can say of where they went.

    callgrind.py       instructions under valgrind's callgrind: the server starts under
                       it; vgdb zeroes and dumps each process (per-function costs, a
                       profile file callgrind_annotate and KCachegrind open)
    callgrind_files.py reading callgrind's output files
    perf.py            instructions from the CPU's own counters (perf stat -e
                       instructions:u), attached to each process for the window, at full
                       speed; only where the machine has hardware counters
    strace.py          system calls by name (strace -c -f), attached likewise
    python_profile.py  Python bytecodes per Python function, from a tracer the server's
                       own interpreter loads (pyhook/sitecustomize.py): where a Python
                       server's instructions went, in Python's names

Which instruction counter a machine has is bench.setup.counters' question (`doctor`
answers it too); this package only runs them, on this machine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from bench.infra.seam import ProcessRef


class CounterError(RuntimeError):
    """A counter could not open or close its window (the message says which process and
    what the tool printed)."""


@dataclass
class ProcessCount:
    """What one process did over one window."""
    pid: int
    command: str
    count: float                      # events: instructions, system calls, bytecodes
    seconds: float                    # how long the window was open on this process
    # where they went: function -> events (callgrind, Python), syscall -> calls (strace)
    parts: dict[str, float] = field(default_factory=dict)
    profile: str | None = None        # the counter's file for it (a callgrind dump)


class Window(Protocol):
    def close(self) -> list[ProcessCount]: ...
    def abandon(self) -> None: ...        # nothing left running, no figure (an error)


class Counter(Protocol):
    """An instruction or system-call counter, as bench.runner.count drives it."""
    method: str                       # as results.json records it
    slowdown: float                   # its server's readiness may take this many times longer

    def wrap(self, argv: list[str]) -> list[str]:
        """The server's command under this counter (unchanged for one that attaches)."""

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """What the server's environment (`base`, as the manifest makes it) needs for
        this counter: variables to set over it."""

    def prepare(self, processes: list[ProcessRef]) -> None:
        """Once the server is ready, before its warm-up."""

    def open(self, processes: list[ProcessRef]) -> Window:
        """Zero (or attach to) each process; the window is open when this returns."""


class LocalCounter:
    """What every counter here shares: it runs on this machine, keeps its files in a
    folder of the count's, and by default leaves the server's command and environment
    as they are and needs nothing once it is ready (a counter that attaches)."""
    slowdown: float = 1
    name = "counter"

    def __init__(self, host, folder):
        if host.remote:
            raise CounterError(f"{self.name} counts servers on this machine only")
        from pathlib import Path
        self.host, self.folder = host, Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def wrap(self, argv: list[str]) -> list[str]:
        return list(argv)

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        return {}

    def prepare(self, processes: list[ProcessRef]) -> None:
        pass
