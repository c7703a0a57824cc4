"""Instructions from the CPU's own counters: `perf stat -e instructions:u`, attached to
each process of the server for the window, while it runs at full speed.

One `perf stat -p PID` per process (its threads, and what they start meanwhile), started
with its events disabled (`-D -1`) and driven through a control FIFO: "enable" opens the
window and "disable" closes it, each acknowledged by perf on the ack FIFO, so the window
is open exactly when the harness says and not from whenever perf got round to attaching.
SIGINT then makes perf write its CSV (`-x,`) and exit.

`event` is instructions:u here; the same mechanism counts any event perf knows, which is
how it is tested on a machine without hardware counters (a tracepoint there).
"""
from __future__ import annotations

import errno
import os
import time
from pathlib import Path

from bench.infra.counters import CounterError, ProcessCount
from bench.infra.counters.attach import AttachingCounter, interrupt, kill
from bench.infra.seam import ProcessRef

EVENT = "instructions:u"
ACK_TIMEOUT_S = 30.0


class Perf(AttachingCounter):
    method = name = "perf"

    def __init__(self, host, folder: Path, event: str = EVENT):
        super().__init__(host, folder)
        self.event = event

    def attach(self, ref: ProcessRef, window: int) -> "_Attached":
        return _Attached(self, ref, window)


class _Attached:
    """One perf stat attached to one process, with its control and ack FIFOs."""

    def __init__(self, perf: Perf, ref: ProcessRef, window: int):
        self.ref = ref
        stem = perf.folder / f"perf.{ref.pid}.{window}"
        self.output, ctl, ack = Path(f"{stem}.csv"), Path(f"{stem}.ctl"), Path(f"{stem}.ack")
        for fifo in (ctl, ack):
            fifo.unlink(missing_ok=True)
            os.mkfifo(fifo)
        self.log = Path(f"{stem}.log")
        self.ctl_fd = self.ack_fd = None
        self.proc = perf.host.spawn(
            ["perf", "stat", "-e", perf.event, "-x,", "-o", str(self.output), "-D", "-1",
             "--control", f"fifo:{ctl},{ack}", "-p", str(ref.pid)], log_path=self.log)
        # a FIFO's blocking open waits for the other end, so one perf that died before
        # opening its own would hang the harness: both ends are opened without blocking
        # (the writer's open is retried until perf has the reading end), perf watched
        self.ack_fd = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        self.ctl_fd = self._writer(ctl)
        self.since = 0.0

    def _writer(self, path: Path) -> int:
        deadline = time.monotonic() + ACK_TIMEOUT_S
        while True:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
                os.set_blocking(fd, True)
                return fd
            except OSError as exc:
                if exc.errno != errno.ENXIO:         # ENXIO: no reader yet
                    raise
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.abandon()
                raise CounterError(f"perf stat for process {self.ref.pid} did not open its "
                                   f"control FIFO: {self._said()}")
            time.sleep(0.005)

    def command(self, word: str) -> None:
        os.write(self.ctl_fd, (word + "\n").encode())
        deadline = time.monotonic() + ACK_TIMEOUT_S
        got = b""
        while b"ack" not in got:
            if self.proc.poll() is not None:
                raise CounterError(f"perf stat for process {self.ref.pid} exited "
                                   f"({self.proc.returncode}): {self._said()}")
            if time.monotonic() > deadline:
                raise CounterError(f"perf stat for process {self.ref.pid} did not "
                                   f"acknowledge {word!r} within {ACK_TIMEOUT_S:g} s")
            try:
                got += os.read(self.ack_fd, 64)
            except BlockingIOError:
                pass
            time.sleep(0.005)

    def started(self) -> None:
        self.command("enable")
        self.since = time.monotonic()

    def finish(self) -> ProcessCount:
        self.command("disable")
        seconds = time.monotonic() - self.since
        interrupt(self.proc, f"perf stat for process {self.ref.pid}")
        self._close_fifos()
        return ProcessCount(self.ref.pid, "", parse_count(self.output.read_text(),
                                                          self.ref.pid), seconds,
                            profile=str(self.output))

    def abandon(self) -> None:
        kill(self.proc)
        self._close_fifos()

    def _close_fifos(self) -> None:
        for name in ("ctl_fd", "ack_fd"):
            fd = getattr(self, name)
            if fd is not None:
                os.close(fd)
                setattr(self, name, None)

    def _said(self) -> str:
        try:
            return self.log.read_text().strip().splitlines()[-1][:200]
        except (OSError, IndexError):
            return "no output"


def parse_count(text: str, pid: int) -> float:
    """The first event's count from `perf stat -x,` output; CounterError when perf says
    it is not supported or not counted."""
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        value = line.split(",")[0]
        try:
            return float(value)
        except ValueError:
            raise CounterError(f"perf stat for process {pid}: {value.strip('<>')} "
                               f"({line.split(',')[2] if line.count(',') >= 2 else line})"
                               ) from None
    raise CounterError(f"perf stat for process {pid} wrote no count")
