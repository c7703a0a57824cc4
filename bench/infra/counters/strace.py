"""System calls by name: `strace -c -f -p PID`, attached to each process of the server
for the window.

What instructions cannot see, the kernel's side of a request, shows here: an extra
`write` per response, a `sendfile` that became `read` + `write`, an `epoll_ctl` per
request. strace (ptrace) was chosen over the kernel's syscall tracepoints (`perf stat -e
'syscalls:sys_enter_*'`, one counter per system call and thread: thousands of file
descriptors for a threaded runtime, and root or perf_event_paranoid -1 everywhere) and
over `perf trace -s` (the same tracepoints, a summary meant for people): ptrace works for
a root harness in a container too, and `-c -U name,calls,errors` prints a table made to
be read back. Its cost, each system call stopping the process twice, slows the window,
not the counts.

The window opens when strace says it attached ("Process N attached" on its stderr) and
closes at SIGINT, when strace detaches and writes the summary (-o).
"""
from __future__ import annotations

import time
from pathlib import Path

from bench.infra.counters import CounterError, ProcessCount
from bench.infra.counters.attach import AttachingCounter, interrupt, kill
from bench.infra.seam import ProcessRef

ATTACH_TIMEOUT_S = 30.0


class Strace(AttachingCounter):
    method = name = "strace"

    def attach(self, ref: ProcessRef, window: int) -> "_Attached":
        return _Attached(self, ref, window)


class _Attached:
    def __init__(self, strace: Strace, ref: ProcessRef, window: int):
        self.ref = ref
        stem = strace.folder / f"strace.{ref.pid}.{window}"
        self.output, self.log = Path(f"{stem}.txt"), Path(f"{stem}.log")
        self.proc = strace.host.spawn(
            ["strace", "-c", "-f", "-U", "name,calls,errors", "-o", str(self.output),
             "-p", str(ref.pid)], log_path=self.log)
        self.since = 0.0

    def started(self) -> None:
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        mark = f"Process {self.ref.pid} attached"
        while mark not in self._said():
            if self.proc.poll() is not None:
                raise CounterError(f"strace could not attach to process {self.ref.pid}: "
                                   f"{self._said().strip().splitlines()[-1:] or 'no output'}")
            if time.monotonic() > deadline:
                raise CounterError(f"strace did not attach to process {self.ref.pid} "
                                   f"within {ATTACH_TIMEOUT_S:g} s")
            time.sleep(0.005)
        self.since = time.monotonic()

    def finish(self) -> ProcessCount:
        seconds = time.monotonic() - self.since
        interrupt(self.proc, f"strace for process {self.ref.pid}")
        calls = parse_summary(self.output.read_text() if self.output.exists() else "")
        return ProcessCount(self.ref.pid, "", float(sum(calls.values())), seconds,
                            {k: float(v) for k, v in calls.items()}, str(self.output))

    def abandon(self) -> None:
        kill(self.proc)

    def _said(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


def parse_summary(text: str) -> dict[str, int]:
    """{syscall: calls} from `strace -c -U name,calls,errors` (the total row left out).
    An empty summary (no system call in the window) is {}."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0] in ("syscall", "total") or set(parts[0]) <= {"-"}:
            continue
        try:
            out[parts[0]] = out.get(parts[0], 0) + int(parts[1])
        except ValueError:
            raise CounterError(f"strace's summary has a line it should not: {line!r}") from None
    return out
