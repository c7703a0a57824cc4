"""Exact CPU per role over a measured window: each role's processes (the server's tree,
the database server's processes, the proxy, the load generator) in a cgroup v2 of their
own on the host that runs them, read at the window's start and end (the host-side steps
are bench/infra/agent/cgroup.py, reached through the Host seam so a remote host is asked
through its agent). A role whose host cannot give it a cgroup (no cgroup2 mount, not
root, a host that does not know the steps) is left to the /proc sampler: `accounting`
says which one measured it.

Also the machine's own CPU over the same window (/proc/stat on each host), so that the
roles' sum can be set against what the machine used.
"""
from __future__ import annotations

import itertools
import threading
import time

from bench.infra.seam import Host

CGROUP2, PROCFS = "cgroup2", "procfs"
_windows = itertools.count(1)


def _ask(host: Host, op: str, **args):
    """A host-side step, or the exception it raised (any: a host that cannot is a host
    that falls back, never a sample lost)."""
    try:
        return host.call(op, **args)
    except Exception as exc:  # noqa: BLE001
        return exc


class RoleCgroups:
    """One window's cgroups: `open()`, `place()` the roles' processes as they are seen,
    `start()`, `stop()` (reads), `close()` (always: moves what still runs back out)."""

    def __init__(self, hosts: dict[str, Host], adopted: dict[str, str] | None = None,
                 left_alone: dict[str, str] | None = None):
        """`adopted`: a role whose processes were born in a cgroup v2 of their own (a
        memory cap, bench.infra.memory_cap) is counted in that one: moving them would take
        them out of it. It is read like the others, neither placed into nor removed.
        `left_alone`: role -> why its processes are not moved and it is read from /proc
        (a database in a container stays in the cgroups its engine made)."""
        self.hosts = hosts
        self.adopted = dict(adopted or {})
        self.left_alone = dict(left_alone or {})
        self.window = f"w{next(_windows)}"
        self.paths: dict[str, str] = {}          # role -> its cgroup folder on its host
        self.why_not: dict[str, str] = {}        # role -> why it is measured from /proc
        self.homes: dict[str, str] = {}          # role -> the cgroup its processes left
        self._placed: dict[str, set[int]] = {}
        self._start: dict[str, int] = {}
        self.cpu_us: dict[str, int] = {}
        self._lock = threading.Lock()

    def _by_host(self, roles) -> dict[int, tuple[Host, list[str]]]:
        out: dict[int, tuple[Host, list[str]]] = {}
        for role in roles:
            host = self.hosts[role]
            out.setdefault(id(host), (host, []))[1].append(role)
        return out

    def open(self) -> "RoleCgroups":
        self.why_not.update({r: why for r, why in self.left_alone.items() if r in self.hosts})
        for host, roles in self._by_host([r for r in self.hosts
                                          if r not in self.left_alone]).values():
            self.paths.update({r: self.adopted[r] for r in roles if r in self.adopted})
            roles = [r for r in roles if r not in self.adopted]
            if not roles:
                continue
            answer = _ask(host, "cgroup_open", window=self.window, roles=roles)
            if isinstance(answer, dict) and "paths" in answer:
                self.paths.update(answer["paths"])
                continue
            why = answer.get("unavailable") if isinstance(answer, dict) else \
                f"the host cannot make cgroups ({type(answer).__name__}: {answer})"
            self.why_not.update({role: why for role in roles})
        self._placed = {role: set() for role in self.paths}
        return self

    def place(self, role: str, pids: list[int]) -> None:
        """Move the role's processes not yet placed into its cgroup. A role whose first
        processes cannot be moved falls back to /proc (its cgroup would miss them)."""
        with self._lock:
            path = self.paths.get(role)
            new = [pid for pid in pids if pid not in self._placed.get(role, ())]
            if path is None or not new or role in self.adopted:
                return
            answer = _ask(self.hosts[role], "cgroup_place", path=path, pids=new)
            self._placed[role].update(new)
            if isinstance(answer, Exception) or answer.get("failed"):
                failed = answer if isinstance(answer, Exception) else answer["failed"]
                self._fall_back(role, f"its processes could not be moved into a cgroup "
                                      f"({failed})")
                return
            if answer["homes"] and role not in self.homes:
                self.homes[role] = next(iter(answer["homes"].values()))

    def _fall_back(self, role: str, why: str) -> None:
        self.why_not[role] = why
        path = self.paths.pop(role)
        _ask(self.hosts[role], "cgroup_close", paths=[path], home=self.homes.get(role, "/"))

    def _usage(self) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        with self._lock:
            for host, roles in self._by_host(self.paths).values():
                answer = _ask(host, "cgroup_usage", paths=[self.paths[r] for r in roles])
                for role in roles:
                    stat = answer.get(self.paths[role]) if isinstance(answer, dict) else None
                    out[role] = stat["usage_usec"] if stat else None
        return out

    def start(self) -> None:
        self._start = {role: usec for role, usec in self._usage().items() if usec is not None}

    def stop(self) -> None:
        for role, usec in self._usage().items():
            if usec is None or role not in self._start:
                self.why_not.setdefault(role, "its cgroup's cpu.stat could not be read")
                continue
            self.cpu_us[role] = usec - self._start[role]

    def accounting(self, role: str) -> str:
        return CGROUP2 if role in self.cpu_us and role not in self.why_not else PROCFS

    def close(self) -> None:
        with self._lock:
            for host, roles in self._by_host([r for r in self.paths
                                              if r not in self.adopted]).values():
                # a role's later processes were born in its cgroup: they go where its
                # first ones came from
                for home in {self.homes.get(r, "/") for r in roles}:
                    _ask(host, "cgroup_close", home=home,
                         paths=[self.paths[r] for r in roles if self.homes.get(r, "/") == home])


class MachineCpu:
    """The CPU each host used over a window, all its CPUs and every process on it (the
    harness's own process too: it is given apart when the host is this machine)."""

    def __init__(self, hosts: list[Host]):
        self.hosts = list({id(h): h for h in hosts}.values())
        self._start: dict[int, dict] = {}
        self._harness_start = 0.0
        self.figures: dict[str, dict] = {}

    def start(self) -> None:
        self._harness_start = time.process_time()
        for host in self.hosts:
            answer = _ask(host, "machine_cpu_us")
            if isinstance(answer, dict):
                self._start[id(host)] = answer

    def stop(self, wall_s: float) -> None:
        harness_s = time.process_time() - self._harness_start
        for host in self.hosts:
            before, after = self._start.get(id(host)), _ask(host, "machine_cpu_us")
            if before is None or not isinstance(after, dict):
                continue
            busy = (after["busy"] - before["busy"]) / 1e6
            elapsed = (after["at"] - before["at"]) / 1e6
            self.figures[host.name] = {
                "busy_cpu_s": round(busy, 3),
                # exact where busy is tick-sampled (see procfs.machine_cpu_us)
                "not_idle_cpu_s": round(after["cpus"] * elapsed
                                        - (after["idle"] - before["idle"]) / 1e6, 3),
                "steal_cpu_s": round((after["steal"] - before["steal"]) / 1e6, 3),
                "cpus": after["cpus"], "mean_busy_cores": round(busy / max(wall_s, 1e-6), 3),
                # the orchestrator (this process, its sampler thread included)
                "harness_cpu_s": None if host.remote else round(harness_s, 3)}


def remove_leftovers(host: Host) -> list[str]:
    """The cgroups a killed harness left on `host` (none when it cannot have any)."""
    answer = _ask(host, "cgroup_remove_leftovers")
    return answer if isinstance(answer, list) else []
