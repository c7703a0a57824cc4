"""A counter that attaches a tool to each process of the server for a window (perf stat,
strace): one tool process per server process, started when the window opens and told to
stop (SIGINT, after which it writes its figures) when it closes. Whatever goes wrong on
the way, every tool process is stopped before the error goes on."""
from __future__ import annotations

import signal
import subprocess
from typing import Protocol

from bench.infra.counters import CounterError, LocalCounter, ProcessCount
from bench.infra.seam import ProcessRef

EXIT_TIMEOUT_S = 30.0


class Attachment(Protocol):
    """One tool attached to one process."""
    def started(self) -> None: ...            # the window is open on it when this returns
    def finish(self) -> ProcessCount: ...     # the window closed: its figures
    def abandon(self) -> None: ...            # stop it whatever its state


class AttachingCounter(LocalCounter):
    def __init__(self, host, folder):
        super().__init__(host, folder)
        self._windows = 0

    def attach(self, ref: ProcessRef, window: int) -> Attachment:
        raise NotImplementedError

    def open(self, processes: list[ProcessRef]) -> "AttachedWindow":
        self._windows += 1
        attached: list[Attachment] = []
        try:
            for ref in processes:
                attached.append(self.attach(ref, self._windows))
            for one in attached:
                one.started()
        except BaseException:
            for one in attached:
                one.abandon()
            raise
        return AttachedWindow(attached)


class AttachedWindow:
    def __init__(self, attached: list[Attachment]):
        self.attached = attached

    def close(self) -> list[ProcessCount]:
        try:
            return [one.finish() for one in self.attached]
        finally:
            self.abandon()

    def abandon(self) -> None:
        for one in self.attached:
            one.abandon()


def interrupt(proc, what: str) -> None:
    """SIGINT to a tool, which then writes its figures and exits; CounterError (after a
    SIGKILL) when it does not exit within EXIT_TIMEOUT_S."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        kill(proc)
        raise CounterError(f"{what} did not exit after SIGINT") from None


def kill(proc) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
