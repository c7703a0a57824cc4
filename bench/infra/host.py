"""This machine as a Host (the protocol is in bench/infra/seam.py): servers, throwaway
databases and the load generator are started here, each in a process group of its own
so that one signal reaches everything it forked; their CPU and memory are read here too,
through psutil (and /proc through the agent's procfs module, the one place that opens it).
Everything else asks a `Host` and never calls subprocess or psutil itself, so running a
role on another machine means another `Host`, not another harness.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterable

import psutil

from bench.infra import state
from bench.infra.agent import network, procfs, sockets
from bench.infra.agent.steps import STEPS, machine
from bench.infra.seam import (Completed, Host, HostUnreachable, HttpAnswer, HttpUnanswered,
                              ProcessFigures, ProcessRef, TransferError, fingerprint_of,
                              http_get, pinned)

__all__ = ["LOCAL", "LocalHost", "Host", "HostUnreachable", "TransferError", "HttpAnswer",
           "HttpUnanswered", "Completed", "ProcessFigures", "ProcessRef", "pinned"]


class LocalHost:
    """This machine. RemoteHost (bench/infra/remote.py) has the same methods for a
    machine reached over SSH, FakeHost (bench/infra/fake.py) for no machine at all."""
    name = "local"
    address = "local"
    remote = False

    def __init__(self):
        # psutil.Process objects behind the refs handed out, so that reading a process
        # 4 times a second does not re-open it each time (as the sampler did before)
        self._procs: dict[ProcessRef, psutil.Process] = {}

    # ------------------------------------------------------------ processes
    def spawn(self, argv: list[str], *, cwd: Path | None = None, env: dict | None = None,
              log_path: Path | None = None, cpus: list[int] | None = None) -> subprocess.Popen:
        """Start argv in a new session (its own process group); output to log_path, or to
        this terminal when None. A Ctrl-C in the terminal reaches the harness only, which
        then stops everything in order. `cpus`: the CPUs it and everything it forks may
        run on. (bench.infra.process_group records the group for a later reaper.)"""
        argv = pinned(argv, cpus)
        log = open(log_path, "ab") if log_path else None
        try:
            if log:
                log.write(f"$ {' '.join(argv)}\n".encode())
                log.flush()
            return subprocess.Popen(argv, cwd=cwd, env=env, stdout=log,
                                    stderr=subprocess.STDOUT if log else None,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            if log:
                log.close()

    def run(self, argv: list[str], *, timeout: float, cwd: Path | None = None,
            env: dict | None = None, on_start: Callable[[int], None] | None = None,
            stop_signal: int = signal.SIGINT, cpus: list[int] | None = None) -> Completed:
        """Run argv to completion and return its output and its own CPU time (from wait4's
        rusage, exact). Past `timeout` it gets `stop_signal`, then SIGKILL. On any exception
        (Ctrl-C included) the process is killed and reaped before the exception goes on."""
        argv = pinned(argv, cpus)
        with tempfile.TemporaryFile("w+b") as out, tempfile.TemporaryFile("w+b") as err:
            start = time.monotonic()
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=err, start_new_session=True)
            timed_out = False
            try:
                # inside the try: a Ctrl-C or SIGTERM while the state file is written
                # (a busy disk) must stop the process too, not leave it running
                state.group_started(proc.pid, argv)
                if on_start:
                    on_start(proc.pid)
                while True:
                    pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        proc.returncode = code = os.waitstatus_to_exitcode(status)
                        cpu_s = rusage.ru_utime + rusage.ru_stime
                        break
                    if time.monotonic() - start > timeout:
                        timed_out = True
                        code, cpu_s = self._stop_and_reap(proc, stop_signal)
                        break
                    time.sleep(0.05)
            except BaseException:
                if proc.returncode is None:
                    self._stop_and_reap(proc, stop_signal)
                raise
            finally:
                state.group_stopped(proc.pid)
            wall_s = time.monotonic() - start
            out.seek(0)
            err.seek(0)
            return Completed(argv, code, out.read().decode("utf-8", "replace"),
                             err.read().decode("utf-8", "replace"), cpu_s, wall_s, timed_out)

    @staticmethod
    def _stop_and_reap(proc: subprocess.Popen, first: int) -> tuple[int, float]:
        """`first` signal, then SIGKILL, to its whole process group (it leads one of its
        own): a child it started (initdb's bootstrap postgres, a build script's commands)
        must not outlive it. Reap it: (status, cpu seconds)."""
        def to_group(sig: int) -> None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)     # the group outlives its leader while members live
        try:
            for sig, wait_s in ((first, 2.0), (signal.SIGKILL, 5.0)):
                to_group(sig)
                deadline = time.monotonic() + wait_s
                while time.monotonic() < deadline:
                    pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
                    if pid:
                        proc.returncode = os.waitstatus_to_exitcode(status)
                        return proc.returncode, rusage.ru_utime + rusage.ru_stime
                    time.sleep(0.02)
        finally:
            if proc.returncode is None:   # interrupted again: SIGKILL and reap regardless
                to_group(signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    _, status, _ = os.wait4(proc.pid, 0)
                    proc.returncode = os.waitstatus_to_exitcode(status)
            to_group(signal.SIGKILL)      # whatever of the group outlived its leader
        return proc.returncode if proc.returncode is not None else -9, 0.0

    def pin(self, pid: int, cpus: list[int]) -> None:
        """Move every thread of a running process to `cpus` (threads it starts later
        inherit the mask of the thread that starts them, processes it forks too)."""
        procfs.pin(pid, cpus)

    def affinity(self, pid: int) -> list[int] | None:
        """The CPUs a running process may use (None once it is gone)."""
        return procfs.affinity(pid)

    def signal_group(self, pid: int, sig: int) -> bool:
        """Send sig to the process group led by pid; False when it is gone."""
        try:
            os.killpg(pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False

    # ------------------------------------------------------------ resources
    def _ref(self, proc: psutil.Process) -> ProcessRef:
        ref = ProcessRef(proc.pid, proc.create_time(), self)
        if len(self._procs) > 20000:        # a long run's worth of exited processes
            self._procs.clear()
        self._procs.setdefault(ref, proc)
        return ref

    def _proc(self, ref: ProcessRef) -> psutil.Process | None:
        """The psutil.Process behind a ref, None when that process is gone (also when its
        pid now belongs to another process)."""
        proc = self._procs.get(ref)
        if proc is None:
            try:
                proc = psutil.Process(ref.pid)
            except psutil.Error:
                return None
            if proc.create_time() != ref.create_time:
                return None
            self._procs[ref] = proc
        return proc

    def _forget(self, ref: ProcessRef) -> None:
        self._procs.pop(ref, None)

    def process(self, pid: int) -> ProcessRef | None:
        """The process running now under pid, None when there is none."""
        try:
            return self._ref(psutil.Process(pid))
        except psutil.Error:
            return None

    def processes(self, pids: Iterable[int]) -> dict[int, ProcessRef]:
        """process() for many pids (one round trip on a RemoteHost); gone ones left out."""
        refs = {pid: self.process(pid) for pid in pids}
        return {pid: ref for pid, ref in refs.items() if ref is not None}

    def tree(self, pid: int) -> list[ProcessRef]:
        """pid and all its descendants that are running now (pid first)."""
        try:
            root = psutil.Process(pid)
            return [self._ref(p) for p in (root, *root.children(recursive=True))]
        except psutil.Error:
            return []

    def running(self, refs: Iterable[ProcessRef], *, zombies: bool = True) -> list[ProcessRef]:
        """The refs whose process still exists (a zombie counts unless zombies=False)."""
        alive = []
        for ref in refs:
            proc = self._proc(ref)
            try:
                if proc is not None and proc.is_running() and \
                        (zombies or proc.status() != psutil.STATUS_ZOMBIE):
                    alive.append(ref)
            except psutil.Error:
                self._forget(ref)
        return alive

    def kill(self, ref: ProcessRef) -> bool:
        """SIGKILL to that one process, unless it is gone; False when it was."""
        proc = self._proc(ref)
        try:
            if proc is not None:
                proc.kill()          # psutil checks the pid still is that process
                return True
        except psutil.Error:
            self._forget(ref)
        return False

    def thread_names(self, pid: int) -> list[str]:
        """The names of a process's threads (what `ps -L` and `top -H` show), [] once gone."""
        return procfs.thread_names(pid)

    def command_line(self, ref: ProcessRef) -> str:
        try:
            proc = self._proc(ref)
            return " ".join(proc.cmdline()) if proc is not None else ""
        except psutil.Error:
            return ""

    def environment(self, ref: ProcessRef) -> list[str]:
        """A process's environment as NAME=value lines ([] when unreadable)."""
        try:
            proc = self._proc(ref)
            return [f"{k}={v}" for k, v in proc.environ().items()] if proc is not None else []
        except psutil.Error:
            return []

    def base_environment(self) -> dict[str, str]:
        """The environment a started process inherits on this host (os.environ here)."""
        return dict(os.environ)

    def connections_on_port(self, refs: list[ProcessRef], port: int) -> dict[int, int]:
        """Established TCP connections each process holds on local `port` (a server's
        accepted client connections), by pid: the agent's reading (one parse of the TCP
        table per network namespace, then each process's fds), as a remote host does it.
        psutil's per-process net_connections parsed the whole table once per process: on
        a loaded 2-core machine eight workers took over half a second, so a reading begun
        mid-window read the last workers after the client had gone (fastapi's 16
        connections read as [3, 2, 0, 0, 0, 0, 0, 0])."""
        # this host stamps a ref with psutil's create_time, the agent with clock ticks:
        # the ref is checked here, the agent is given the process's start as it reads it
        live = [r.pid for r in refs if (proc := self._proc(r)) is not None and proc.is_running()]
        counts = procfs.connections([[pid, procfs.started(pid)] for pid in live], port)
        return {int(pid): n for pid, n in counts.items()}

    def socket_memory(self, groups: dict[str, list[ProcessRef]]) -> dict[str, list[int]] | None:
        """Per group: [bytes, sockets], the kernel's memory for the TCP sockets its
        processes hold (bench.infra.agent.sockets, as a remote host's agent reads it);
        None when it cannot be read."""
        return sockets.socket_memory(
            {name: [[r.pid, procfs.started(r.pid)] for r in refs
                    if (proc := self._proc(r)) is not None and proc.is_running()]
             for name, refs in groups.items()})

    def read(self, ref: ProcessRef, memory: bool) -> ProcessFigures | None:
        """CPU seconds so far and (when `memory`) proportional memory, or None once gone.

        PSS splits each shared page between the processes that map it, so a server of
        eight forked workers is not charged eight times for the pages they share (RSS
        would be, and would penalise multi-process servers against a single process)."""
        proc = self._proc(ref)
        if proc is None:
            return None
        try:
            with proc.oneshot():
                t = proc.cpu_times()
                cpu = t.user + t.system
                if not memory:
                    return ProcessFigures(cpu, None, "")
                # smaps_rollup read once for the PSS and its parts (psutil's
                # memory_full_info reads the same file but keeps only the total)
                mem = procfs.memory_of(ref.pid)
                if mem is None:
                    return ProcessFigures(cpu, proc.memory_info().rss / 2**20, "rss")
                return ProcessFigures(cpu, *mem)
        except psutil.Error:
            self._forget(ref)
            return None

    def read_many(self, refs: Iterable[ProcessRef],
                  memory: bool) -> dict[ProcessRef, ProcessFigures | None]:
        """read() of many processes at once: one round trip per sampling tick on a
        RemoteHost."""
        return {ref: self.read(ref, memory) for ref in refs}

    # ------------------------------------------------------------ network and tools
    def port_is_free(self, port: int, host: str = "127.0.0.1") -> bool:
        return network.port_free(port, host)

    def tcp_connections_accepted(self) -> int:
        """TCP connections this network namespace has accepted so far (the kernel's
        PassiveOpens counter): the difference over a window counts the connections the
        servers (and a proxy) accepted in it, which `Connection: close` must make one per
        request."""
        return procfs.passive_opens()

    def which(self, tool: str) -> str | None:
        return shutil.which(tool)

    def http_get(self, url: str, timeout: float, headers: dict | None = None) -> HttpAnswer:
        """GET url from this machine (HttpUnanswered when nothing answers)."""
        return http_get(url, timeout, headers)

    def call(self, op: str, **args) -> Any:
        """One of the agent's host-side steps (bench/infra/agent/steps.py), run here."""
        return STEPS[op](**args)

    # ------------------------------------------------------------ paths
    def path(self, path: Path | str) -> str:
        """A path on this host: `~` is the user's home."""
        return os.path.expanduser(str(path))

    def project_path(self, local_path: Path | str) -> str:
        """Where a file of this repository is on this host: here, where it is."""
        return str(local_path)

    def cache_dir(self) -> str:
        """The harness's build cache on this host."""
        from bench.paths import CACHE_DIR
        return str(CACHE_DIR)

    # ------------------------------------------------------------ files and identity
    def put(self, local_path: Path | str, host_path: Path | str) -> None:
        """Copy a file or folder to this host (here: a plain copy unless it is the same)."""
        _copy(Path(local_path), Path(host_path))

    def get(self, host_path: Path | str, local_path: Path | str) -> None:
        """Copy a file or folder from this host to the harness's machine."""
        _copy(Path(host_path), Path(local_path))

    def machine(self) -> dict:
        """The machine's part of the environment block, and this Python's version."""
        return machine()

    def fingerprint(self) -> dict:
        """This host's environment block: machine() with the tools' versions under
        "tools" (what bench.infra.environment records for a run)."""
        return fingerprint_of(self)

    def describe_where(self) -> str:
        """Where, for a message: nothing here ("port 5432 is busy")."""
        return ""

    def close(self) -> None:
        """Nothing to disconnect here (RemoteHost kills what it spawned and disconnects)."""


def _copy(source: Path, dest: Path) -> None:
    """A plain copy; TransferError (an OSError, errno kept) when it cannot be made."""
    if source.resolve() == dest.resolve():
        return
    try:
        if source.is_dir():
            shutil.copytree(source, dest, dirs_exist_ok=True)
        else:
            shutil.copy2(source, dest)
    except shutil.Error as exc:
        raise TransferError(f"copying {source} to {dest} failed: {exc}") from None
    except OSError as exc:
        raise TransferError(exc.errno, f"copying {source} to {dest} failed: {exc.strerror}",
                            exc.filename) from None


LOCAL = LocalHost()
