"""A command started in a process group of its own on a host: the one way servers,
proxies and throwaway databases are started, listed and stopped.

Stopping is always the same sequence: remember every process of the tree, send the
first signal to the whole group, wait up to a grace period for them to go, SIGKILL what
is left (one by one too: a worker can leave the group or outlive its leader), SIGKILL
the group, reap the leader. The group is recorded in bench.infra.state from its start
until nothing of it is left, so that a harness killed in between leaves it to the next
invocation's reaper (on another host, its agent stops it instead).
"""
from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from bench.infra import state
from bench.infra.seam import Host, ProcessRef, Spawned

LEADER_WAIT_S = 5.0          # after SIGKILL, for the leader to be reaped


class ProcessGroup:
    """One started group: `proc` (what the host's spawn returned, its leader), and every
    process of its tree ever seen."""

    def __init__(self, host: Host, proc: Spawned, argv: list[str]):
        self.host, self.proc, self.argv = host, proc, list(argv)
        self._seen: dict[int, ProcessRef] = {}
        self.stopped = False
        # this machine's groups only: another host's agent stops its own groups
        self._recorded = not host.remote
        if self._recorded:
            state.group_started(proc.pid, self.argv)   # found again if the harness is killed

    @classmethod
    def start(cls, host: Host, argv: list[str], *, cwd: Path | str | None = None,
              env: dict | None = None, log_path: Path | str | None = None,
              cpus: list[int] | None = None) -> "ProcessGroup":
        """argv in a new session on `host` (FileNotFoundError when it is not there)."""
        proc = host.spawn(argv, cwd=cwd, env=env, log_path=log_path, cpus=cpus)
        try:
            return cls(host, proc, argv)
        except BaseException:
            # a Ctrl-C or SIGTERM while the group is recorded (the state file's write on
            # a busy disk): nobody else knows of it yet, so it is stopped here
            host.signal_group(proc.pid, signal.SIGKILL)
            raise

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def alive(self) -> bool:
        """Its leader has not exited (reaping it if it has)."""
        return self.proc.poll() is None

    def tree(self) -> list[ProcessRef]:
        """The leader and its descendants running now (leader first; [] once it is gone)."""
        return self.host.tree(self.proc.pid)

    def members(self, *, zombies: bool = True) -> list[ProcessRef]:
        """Every process of the tree seen so far (the tree is looked at now first) that
        still runs: a worker that left the tree stays a member."""
        for ref in self.tree():
            self._seen.setdefault(ref.pid, ref)
        return self.host.running(self._seen.values(), zombies=zombies)

    def _survivors(self) -> list[ProcessRef]:
        self.proc.poll()                              # reap the leader as soon as it exits
        return self.host.running(self._seen.values(), zombies=False)

    def stop(self, first: int = signal.SIGTERM, grace: float = 5.0) -> float:
        """`first` to the group, SIGKILL to whatever is left after `grace`; the leader
        reaped. Returns seconds taken. The record in bench.infra.state goes once nothing
        of the group is left (what survived SIGKILL stays for a later reaper)."""
        start = time.monotonic()
        if self.alive():
            self.members()                            # remember the tree before it goes
        self.host.signal_group(self.proc.pid, first)
        deadline = start + grace
        while self._survivors() and time.monotonic() < deadline:
            time.sleep(0.02)
        # workers that left the group, or outlived their leader, are killed one by one
        for ref in self._survivors():
            self.host.kill(ref)
        self.host.signal_group(self.proc.pid, signal.SIGKILL)
        try:
            self.proc.wait(timeout=LEADER_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
        self.stopped = True
        if self.proc.returncode is not None and not self._survivors():
            self.forget()
        return time.monotonic() - start

    def forget(self) -> None:
        """Nothing of the group is left: no reaper needs to look for it."""
        if self._recorded:
            state.group_stopped(self.proc.pid)
            self._recorded = False
