"""Another machine as a Host: the same methods as LocalHost, over one SSH connection to
the harness's agent there (bench/infra/ssh.py: the connection and what is guaranteed when
it fails; bench/infra/agent: what runs there).

The agent is the parent of every process started there, so it reaps them with wait4 and
returns their exact CPU time (rusage), as LocalHost does; it reads /proc itself, one
round trip per sampling tick for all pids.
"""
from __future__ import annotations

import os
import posixpath
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from bench.infra.agent.steps import STEPS
from bench.infra.seam import (Completed, HostUnreachable, HttpAnswer, ProcessFigures, ProcessRef,
                              fingerprint_of, http_get, pinned)
from bench.infra.ssh import (CALL_TIMEOUT_S, CONNECT_TIMEOUT_S, WATCHDOG_S, AgentSession,
                             RemoteError)
from bench.paths import REPO

__all__ = ["RemoteHost", "RemoteProcess", "HostUnreachable", "RemoteError"]

STEP_TIMEOUT_S = 30.0     # one file or process-search step (see call())


class RemoteProcess:
    """What RemoteHost.spawn returns: the part of subprocess.Popen the harness uses
    (pid, returncode, poll, wait, send_signal, terminate, kill), plus `cpu_s` (its own
    CPU seconds, from wait4) once it has exited."""

    def __init__(self, host: "RemoteHost", pid: int, start: int, argv: list[str]):
        self.host, self.pid, self.args = host, pid, argv
        self.ref = ProcessRef(pid, start, host)
        self.returncode: int | None = None
        self.cpu_s: float | None = None

    def _done(self, result: dict | None) -> None:
        if result is not None:
            self.returncode, self.cpu_s = result["returncode"], result["cpu_s"]

    def poll(self) -> int | None:
        if self.returncode is None:
            self._done(self.host._call("poll", pid=self.pid))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit status; subprocess.TimeoutExpired after `timeout` (None: no limit,
        asked in bounded slices so that a lost host still raises)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = 60.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                if self.poll() is None:
                    raise subprocess.TimeoutExpired(self.args, timeout)
                break
            left = min(left, 60.0)
            self._done(self.host._call("wait", within=left + self.host.call_timeout,
                                       pid=self.pid, timeout=left))
        return self.returncode

    def send_signal(self, sig: int) -> None:
        self.host._call("signal", pid=self.pid, sig=int(sig))

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __repr__(self) -> str:
        return f"<RemoteProcess {self.pid} on {self.host.name} returncode={self.returncode}>"


class RemoteHost:
    """A machine reached over SSH, with LocalHost's methods (see bench/infra/host.py for
    each one's meaning). Paths given to it are paths on that machine: absolute, `~/...`,
    or relative to `workdir` (where the project is copied to). `port` None: the one the
    user's SSH configuration names for `address` (else 22)."""
    remote = True            # its files are on another machine: put() and get()

    def __init__(self, address: str, *, name: str | None = None, user: str | None = None,
                 port: int | None = None, workdir: str = "~/webbench", python: str = "python3",
                 connect_options: dict | None = None, call_timeout: float = CALL_TIMEOUT_S,
                 connect_timeout: float = CONNECT_TIMEOUT_S, watchdog_s: float = WATCHDOG_S):
        self.address, self.user, self.workdir, self.python = address, user, workdir, python
        self.name = name or f"{user + '@' if user else ''}{address}" \
                            f"{'' if port in (None, 22) else f':{port}'}"
        self._session = AgentSession(address, name=self.name, user=user, port=port,
                                     python=python, connect_options=connect_options,
                                     call_timeout=call_timeout, connect_timeout=connect_timeout,
                                     watchdog_s=watchdog_s)
        self._call = self._session.call

    # ------------------------------------------------------------ connection
    @property
    def port(self) -> int | None:
        """The SSH port: as given, or once connected the one really used."""
        return self._session.port

    @property
    def call_timeout(self) -> float:
        return self._session.call_timeout

    @property
    def watchdog_s(self) -> float:
        return self._session.watchdog_s

    def connect(self) -> "RemoteHost":
        """Open the connection and start the agent (done by the first call otherwise)."""
        self._session.connect()
        return self

    @property
    def agent_pid(self) -> int | None:
        """The agent's pid on that host (None before connecting)."""
        return self._session.hello["pid"] if self._session.hello else None

    @property
    def unreachable(self) -> str | None:
        """Why this host is unreachable, or None."""
        return self._session.broken

    def alive(self) -> bool:
        """The liveness probe: its agent answers now."""
        return self._session.alive()

    def close(self) -> str | None:
        """Stop everything started on this host, then disconnect. Never raises; returns
        what could not be done, or None."""
        return self._session.close()

    def __enter__(self) -> "RemoteHost":
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RemoteHost {self.name}>"

    def describe_where(self) -> str:
        return f" on {self.name}"

    # ------------------------------------------------------------ paths
    def path(self, path: Path | str) -> str:
        """A path on this host: `~` is its user's home, a relative path is under workdir."""
        home = self._session.connect()["home"]
        text = str(path)
        if text == "~" or text.startswith("~/"):
            return home + text[1:]
        if text.startswith("/"):
            return text
        workdir = self.workdir
        if workdir == "~" or workdir.startswith("~/"):
            workdir = home + workdir[1:]
        elif not workdir.startswith("/"):
            workdir = posixpath.join(home, workdir)
        return posixpath.normpath(posixpath.join(workdir, text))

    def cache_dir(self) -> str:
        """The harness's build cache on this host (as bench.paths.CACHE_DIR locally)."""
        return self.path("~/.cache/webbench")

    def project_path(self, local_path: Path | str) -> str:
        """Where a file of this repository is on this host (the project is copied to
        workdir); ValueError for a path outside the repository."""
        # not resolved: the virtualenv's python is a symlink out of the project
        rel = Path(os.path.abspath(local_path)).relative_to(REPO)
        return self.path(rel.as_posix() if str(rel) != "." else ".")

    # ------------------------------------------------------------ processes
    def spawn(self, argv: list[str], *, cwd: Path | str | None = None, env: dict | None = None,
              log_path: Path | str | None = None, cpus: list[int] | None = None) -> RemoteProcess:
        """Start argv in a new session (its own process group) on this host; output to
        log_path there (its parent folders are created), else discarded. `env` None: the
        environment of the agent (see base_environment)."""
        argv = pinned([str(a) for a in argv], cpus)
        started = self._call("start", argv=argv, cwd=self.path(cwd) if cwd else None, env=env,
                             log=self.path(log_path) if log_path else None)
        self._session.spawned[started["pid"]] = started["start"]
        return RemoteProcess(self, started["pid"], started["start"], argv)

    def run(self, argv: list[str], *, timeout: float, cwd: Path | str | None = None,
            env: dict | None = None, on_start: Callable[[int], None] | None = None,
            stop_signal: int = signal.SIGINT, cpus: list[int] | None = None) -> Completed:
        """Run argv to completion on this host: its output, status and own CPU time (the
        agent is its parent and reaps it with wait4: rusage, exact, its reaped children
        included, as on LocalHost). Past `timeout` it gets `stop_signal`, then SIGKILL.
        On any other exception it is stopped and reaped before the exception goes on."""
        argv = pinned([str(a) for a in argv], cpus)
        start = time.monotonic()
        started = self._call("start", argv=argv, cwd=self.path(cwd) if cwd else None, env=env,
                             capture=True)
        pid = started["pid"]
        self._session.spawned[pid] = started["start"]
        done, timed_out = None, False
        try:
            if on_start:
                on_start(pid)
            left = max(0.0, timeout - (time.monotonic() - start))
            done = self._call("wait", within=left + self.call_timeout, pid=pid, timeout=left)
            if done is None:
                timed_out = True
                done = self._stop_and_reap(pid, stop_signal)
        except HostUnreachable:
            raise
        except BaseException:
            if done is None:
                try:
                    self._stop_and_reap(pid, stop_signal)
                except Exception:  # noqa: BLE001 - the first exception goes on
                    pass
            raise
        self._session.spawned.pop(pid, None)
        return Completed(argv, done["returncode"], done.get("stdout", ""),
                         done.get("stderr", ""), done["cpu_s"], time.monotonic() - start,
                         timed_out)

    def _stop_and_reap(self, pid: int, first: int) -> dict:
        for sig, wait_s in ((first, 2.0), (signal.SIGKILL, 5.0)):
            self._call("signal", pid=pid, sig=int(sig))
            done = self._call("wait", within=wait_s + self.call_timeout, pid=pid, timeout=wait_s)
            if done is not None:
                return done
        return {"returncode": -9, "cpu_s": 0.0}

    def signal_group(self, pid: int, sig: int) -> bool:
        return self._call("killpg", pid=pid, sig=int(sig))

    def pin(self, pid: int, cpus: list[int]) -> None:
        self._call("pin", pid=pid, cpus=list(cpus))

    def affinity(self, pid: int) -> list[int] | None:
        return self._call("affinity", pid=pid)

    # ------------------------------------------------------------ resources
    def process(self, pid: int) -> ProcessRef | None:
        return self.processes([pid]).get(pid)

    def processes(self, pids: Iterable[int]) -> dict[int, ProcessRef]:
        pids = list(pids)
        if not pids:
            return {}
        found = self._call("processes", pids=pids)
        return {int(pid): ProcessRef(int(pid), start, self) for pid, start in found.items()}

    def tree(self, pid: int) -> list[ProcessRef]:
        return [ProcessRef(p, start, self) for p, start in self._call("tree", pid=pid)]

    def running(self, refs: Iterable[ProcessRef], *, zombies: bool = True) -> list[ProcessRef]:
        refs = list(refs)
        if not refs:
            return []
        states = self._call("status", refs=[[r.pid, r.create_time] for r in refs])
        return [r for r, state in zip(refs, states)
                if state is not None and (zombies or state not in ("zombie", "dead"))]

    def kill(self, ref: ProcessRef) -> bool:
        return self._call("kill", pid=ref.pid, start=ref.create_time)

    def thread_names(self, pid: int) -> list[str]:
        return self._call("threads", pid=pid)

    def command_line(self, ref: ProcessRef) -> str:
        return self._call("cmdline", pid=ref.pid, start=ref.create_time)

    def environment(self, ref: ProcessRef) -> list[str]:
        return self._call("environ", pid=ref.pid, start=ref.create_time)

    def base_environment(self) -> dict[str, str]:
        """The agent's environment: what a process started here inherits by default (the
        SSH session's, not the harness's)."""
        return dict(self._session.connect()["env"])

    def connections_on_port(self, refs: list[ProcessRef], port: int) -> dict[int, int]:
        refs = list(refs)
        if not refs:
            return {}
        counts = self._call("conns", refs=[[r.pid, r.create_time] for r in refs], port=port)
        return {int(pid): n for pid, n in counts.items()}

    def socket_memory(self, groups: dict[str, list[ProcessRef]]) -> dict[str, list[int]] | None:
        return self._call("sockmem", groups={name: [[r.pid, r.create_time] for r in refs]
                                             for name, refs in groups.items()})

    def read(self, ref: ProcessRef, memory: bool) -> ProcessFigures | None:
        return self.read_many([ref], memory)[ref]

    def read_many(self, refs: Iterable[ProcessRef],
                  memory: bool) -> dict[ProcessRef, ProcessFigures | None]:
        """CPU seconds and PSS (RSS where that is unreadable) of every ref, in one round
        trip (see bench/infra/agent/procfs.py read())."""
        refs = list(refs)
        if not refs:
            return {}
        rows = self._call("read", refs=[[r.pid, r.create_time] for r in refs], memory=memory)
        return {r: ProcessFigures(*row) if row is not None else None for r, row in zip(refs, rows)}

    # ------------------------------------------------------------ network and tools
    def port_is_free(self, port: int, host: str = "127.0.0.1") -> bool:
        return self._call("port_free", port=port, host=host)

    def tcp_connections_accepted(self) -> int:
        return self._call("accepted")

    def which(self, tool: str) -> str | None:
        return self._call("which", tool=tool)

    def http_get(self, url: str, timeout: float, headers: dict | None = None) -> HttpAnswer:
        """GET url from the harness's machine, as for a server on LocalHost: a readiness
        check asks what the load generator's clients will reach."""
        return http_get(url, timeout, headers)

    def call(self, op: str, **args) -> Any:
        """One of the agent's host-side steps (bench/infra/agent/steps.py), run there;
        bounded by STEP_TIMEOUT_S (a folder's removal may take a while)."""
        if op not in STEPS:
            raise ValueError(f"no host-side step {op!r}: the steps are {', '.join(sorted(STEPS))}")
        return self._call(op, within=STEP_TIMEOUT_S, **args)

    # ------------------------------------------------------------ files and identity
    def put(self, local_path: Path | str, host_path: Path | str) -> None:
        """Copy a local file or folder to this host over SFTP (a folder's contents are
        merged into host_path, as LocalHost's copytree does; parents are created).
        TransferError when it cannot be copied while the host still answers."""
        local, remote = Path(local_path), self.path(host_path)
        if not local.exists():
            raise FileNotFoundError(2, "No such file or directory", str(local))
        self._session.copy(self._session.aput(local, remote), f"copying {local} to {remote}")

    def get(self, host_path: Path | str, local_path: Path | str) -> None:
        """Copy a file or folder of this host to the harness's machine over SFTP;
        TransferError when it cannot be copied while the host still answers."""
        remote, local = self.path(host_path), Path(local_path)
        self._session.copy(self._session.aget(remote, local), f"copying {remote} to {local}")

    def machine(self) -> dict:
        """The machine's part of the environment block, and the version of the python3
        the agent runs on."""
        return self._call("machine")

    def fingerprint(self) -> dict:
        """This host's environment block, with the keys of LocalHost.fingerprint()."""
        return fingerprint_of(self)
