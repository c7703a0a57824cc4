"""Python bytecodes per Python function: where a Python server's instructions went, in
the names its authors use.

Under callgrind a Python server's instructions belong to the interpreter's C functions
(_PyEval_EvalFrameDefault, _PyObject_Free), which tell a sanic user nothing. The
interpreter's own tracing hook (sys.settrace with opcode events) counts the bytecodes
each Python function executes itself, deterministically too; pyhook/sitecustomize.py
installs it in every Python process of the server (the folder goes first on its
PYTHONPATH) and answers two real-time signals, zero and dump. A C function called from
Python (json.dumps in ujson, a regex match) executes no bytecode: its cost shows in the
callgrind list, not here.

This runs in a start of its own, not under valgrind: the tracer costs the server 20-50
times its speed and its own instructions would be counted as the server's.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from bench.infra.counters import CounterError, LocalCounter, ProcessCount
from bench.infra.seam import Host, ProcessRef

HOOK = Path(__file__).resolve().parent / "pyhook"
ZERO, DUMP = "RTMIN+5", "RTMIN+6"
ANSWER_TIMEOUT_S = 30.0


class PythonProfile(LocalCounter):
    method = "python bytecodes"
    name = "the Python profile"
    # until the first zero the tracer sees calls only: about twice as slow a start-up
    slowdown = 3

    def __init__(self, host: Host, folder: Path):
        super().__init__(host, folder)
        self._zeroed: dict[int, int] = {}
        self._dumps: dict[int, int] = {}

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        path = base.get("PYTHONPATH", "")
        return {"BENCH_PYCOUNT_DIR": str(self.folder),
                "PYTHONPATH": str(HOOK) + (f":{path}" if path else "")}

    def hooked(self, processes: list[ProcessRef]) -> list[ProcessRef]:
        """The processes that loaded the hook and still run what loaded it (a launcher
        that exec'd another program keeps its pid, not its Python)."""
        out = []
        for ref in processes:
            marker = self.folder / f"ready.{ref.pid}"
            if not marker.exists():
                continue
            interpreter = marker.read_text().strip()
            if interpreter and interpreter in self.host.command_line(ref):
                out.append(ref)
        if not out:
            raise CounterError("no process of the server loaded the Python profile's hook "
                               "(its interpreter did not read PYTHONPATH's sitecustomize)")
        return out

    def open(self, processes: list[ProcessRef]) -> "PythonWindow":
        hooked = self.hooked(processes)
        opened = {}
        for ref in hooked:
            k = self._zeroed[ref.pid] = self._zeroed.get(ref.pid, 0) + 1
            self._signal(ref, ZERO)
            self._wait(self.folder / f"zeroed.{ref.pid}.{k}", ref)
            opened[ref.pid] = (ref, time.monotonic())
        return PythonWindow(self, opened)

    def _signal(self, ref: ProcessRef, name: str) -> None:
        done = self.host.run(["kill", "-s", name, str(ref.pid)], timeout=10)
        if done.returncode != 0:
            raise CounterError(f"could not signal process {ref.pid}: {done.stderr.strip()}")

    def _wait(self, path: Path, ref: ProcessRef) -> None:
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while not path.exists():
            if not self.host.running([ref]) or time.monotonic() > deadline:
                raise CounterError(f"process {ref.pid} did not answer the Python profile's "
                                   f"signal (no {path.name} within {ANSWER_TIMEOUT_S:g} s)")
            time.sleep(0.005)

    def dump(self, ref: ProcessRef) -> dict:
        k = self._dumps[ref.pid] = self._dumps.get(ref.pid, 0) + 1
        self._signal(ref, DUMP)
        path = self.folder / f"py.{ref.pid}.{k}.json"
        self._wait(path, ref)
        return json.loads(path.read_text())


class PythonWindow:
    def __init__(self, profile: PythonProfile, opened: dict[int, tuple[ProcessRef, float]]):
        self.profile, self.opened = profile, opened

    def abandon(self) -> None:
        """Nothing runs beside the server: its counts are left where they are."""

    def close(self) -> list[ProcessCount]:
        out = []
        for pid, (ref, since) in self.opened.items():
            data = self.profile.dump(ref)
            seconds = time.monotonic() - since
            parts = {k: float(v) for k, v in data["bytecodes"].items()}
            out.append(ProcessCount(pid, self.profile.host.command_line(ref),
                                    float(sum(parts.values())), seconds, parts,
                                    str(self.profile.folder / f"py.{pid}."
                                        f"{self.profile._dumps[pid]}.json")))
        return out

