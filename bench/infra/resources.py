"""CPU and memory of the server, the database and the load generator, sampled during the
measured window (several readings a second, in a background thread).

Each *group* is a function returning the pids that belong to it right now (a server's
whole process tree, the database server's processes, wrk), so workers forked or
restarted during the window are counted from the moment they are first seen. A group
may be given as (function, host) when it runs on another host than the sampler's; each
host is read once per tick for all its processes (one round trip on a RemoteHost).

Where a group's host allows it, its processes are also placed in a cgroup of their own
for the window (bench.infra.cgroups): its CPU is then the cgroup's, exact, exited
processes included, and the group says `"accounting": "cgroup2"`; otherwise the sum of
the sampled readings, `"procfs"`. The machine's whole CPU over the window is read too.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Union

from bench.infra.cgroups import CGROUP2, MachineCpu, RoleCgroups
from bench.infra.host import LOCAL, Host, ProcessRef

CPU_INTERVAL_S = 0.25      # 4 readings a second: enough for a peak, cheap on a busy machine
MEMORY_EVERY = 4           # PSS (smaps_rollup) once a second: it is the dearer reading


@dataclass(frozen=True)
class MemoryReading:
    """One reading of a process tree's memory: MiB, and what kind of figure it is (pss,
    or uss / rss where PSS is unreadable; several kinds joined by "/")."""
    mb: float
    kind: str
    split: dict | None = None      # its parts: {"anon", "file", "shmem"} MiB (_split_sum)


def memory_now(host: Host, pids: list[int]) -> MemoryReading | None:
    """The memory of `pids` on `host` now, read as the sampler reads it in a window (PSS
    from each process's smaps_rollup); None when none of them could be read."""
    try:
        refs = list(host.processes(pids).values()) if pids else []
        figures = [f for f in host.read_many(refs, True).values()
                   if f is not None and f.memory_mb is not None] if refs else []
    except Exception:  # noqa: BLE001 - an unreadable tree is no reading, never a failure
        return None
    if not figures:
        return None
    return MemoryReading(round(sum(f.memory_mb for f in figures), 1),
                         "/".join(sorted({f.memory_kind for f in figures})),
                         _split_sum([f.split for f in figures]))


def _split_sum(splits: list[dict | None]) -> dict | None:
    """The parts of several processes' PSS added up; None unless every one had them."""
    if not splits or any(s is None for s in splits):
        return None
    return {part: round(sum(s[part] for s in splits), 1) for part in splits[0]}


@dataclass
class _Group:
    pids: Callable[[], list[int]]
    host: Host
    last_cpu: dict[int, float] = field(default_factory=dict)
    cpu_s: float = 0.0
    peak_cores: float = 0.0
    memory: list[float] = field(default_factory=list)
    memory_split: list[dict] = field(default_factory=list)
    memory_kind: str = ""
    max_processes: int = 0
    socket_memory: list[float] = field(default_factory=list)   # MiB, with each memory reading
    max_sockets: int = 0


class ResourceSampler:
    """Use as a context manager around the measured window; `figures()` afterwards."""

    def __init__(self, groups: dict[str, Union[Callable[[], list[int]],
                                               tuple[Callable[[], list[int]], Host]]],
                 host: Host = LOCAL, interval: float = CPU_INTERVAL_S,
                 adopted: dict[str, str] | None = None,
                 left_alone: dict[str, str] | None = None,
                 cgroup_memory: dict[str, Callable[[], dict | None]] | None = None):
        self.groups = {name: _Group(*g) if isinstance(g, tuple) else _Group(g, host)
                       for name, g in groups.items()}
        self.host, self.interval = host, interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._procs: dict[tuple[int, int], ProcessRef] = {}    # (id(host), pid) -> ref
        self.started = self.ended = 0.0
        self.readings = 0
        # `adopted`: a role counted in the cgroup v2 it was born in; `left_alone`: a role
        # whose processes are not to be moved, read from /proc (bench.infra.cgroups)
        self.cgroups = RoleCgroups({name: g.host for name, g in self.groups.items()}, adopted,
                                   left_alone)
        # a role in a memory cgroup of its own (--server-memory): its account read with
        # each memory reading, the fullest kept (socket buffers exist only under load)
        self.cgroup_memory = dict(cgroup_memory or {})
        self.cgroup_memory_fullest: dict[str, dict] = {}
        self.machine = MachineCpu([g.host for g in self.groups.values()])

    def __enter__(self) -> "ResourceSampler":
        self.started = time.monotonic()
        self.cgroups.open()
        try:
            # places the groups' processes; no memory yet: the load has not begun (a
            # reading here made a known 32 MiB of connections read as 11 in a 2 s window)
            self._read(first=True, memory=False)
            self.cgroups.start()
            self.machine.start()
        except BaseException:
            self.cgroups.close()
            raise
        self._thread = threading.Thread(target=self._loop, name="resource-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._stop.set()
            if self._thread:
                self._thread.join(timeout=5)
            # a window too short for a tick's memory reading gets one at its end
            self._read(first=False, memory=not any(g.memory for g in self.groups.values()))
            self.ended = time.monotonic()
            self.cgroups.stop()
            self.machine.stop(self.ended - self.started)
        finally:
            self.cgroups.close()        # also on Ctrl-C: nothing stays placed

    def place(self, name: str, pids: list[int]) -> None:
        """Put a group's processes in its cgroup now (a load generator just started),
        not at the next reading: its CPU counts from here."""
        self.cgroups.place(name, pids)

    def _loop(self) -> None:
        tick = 0
        while not self._stop.wait(self.interval):
            tick += 1
            # the first a tick into the window (a 1 s window gets one), then every second
            self._read(first=False, memory=tick % MEMORY_EVERY == 1)

    def _refs(self, host: Host, pids: list[int]) -> dict[int, ProcessRef]:
        """The process behind each pid, as first seen (a pid seen again is the same)."""
        new = [pid for pid in pids if (id(host), pid) not in self._procs]
        if new:
            for pid, ref in host.processes(new).items():
                self._procs[(id(host), pid)] = ref
        return {pid: self._procs[(id(host), pid)] for pid in pids
                if (id(host), pid) in self._procs}

    def _read(self, *, first: bool, memory: bool) -> None:
        now = time.monotonic()
        dt = max(now - getattr(self, "_last_read", now), 1e-6)
        self._last_read = now
        self.readings += 1
        listed: dict[str, dict[int, ProcessRef]] = {}
        for name, group in self.groups.items():
            try:
                listed[name] = self._refs(group.host, group.pids())
            except Exception:  # noqa: BLE001 - a group that cannot be listed reads as empty
                listed[name] = {}
            self.cgroups.place(name, list(listed[name]))
        figures_of: dict[tuple[int, ProcessRef], object] = {}     # (id(host), ref)
        for host in {id(g.host): g.host for g in self.groups.values()}.values():
            refs = [ref for name, g in self.groups.items() if g.host is host
                    for ref in listed[name].values()]
            try:
                read = host.read_many(refs, memory) if refs else {}
            except Exception:  # noqa: BLE001 - an unreadable host reads as empty this tick
                read = {}
            figures_of.update({(id(host), ref): f for ref, f in read.items()})
            if memory:
                self._read_socket_memory(host, listed)
        for name, group in self.groups.items():
            delta, mem_total, kinds, seen, splits = 0.0, 0.0, set(), 0, []
            for pid, ref in listed[name].items():
                figures = figures_of.get((id(group.host), ref))
                if figures is None:
                    continue
                seen += 1
                previous = group.last_cpu.get(pid)
                group.last_cpu[pid] = figures.cpu_s
                if previous is not None:
                    delta += max(0.0, figures.cpu_s - previous)
                if figures.memory_mb is not None:
                    mem_total += figures.memory_mb
                    kinds.add(figures.memory_kind)
                    splits.append(figures.split)
            group.max_processes = max(group.max_processes, seen)
            if not first:
                group.cpu_s += delta
                # a short interval (the final reading right after the last tick) holds a
                # whole tick of CPU-time rounding: no peak from it
                if dt >= self.interval / 2:
                    group.peak_cores = max(group.peak_cores, delta / dt)
            if memory and name in self.cgroup_memory:
                self._read_cgroup_memory(name)
            if memory and seen:
                group.memory.append(mem_total)
                group.memory_kind = "/".join(sorted(kinds))
                if (split := _split_sum(splits)) is not None:
                    group.memory_split.append(split)

    def _read_socket_memory(self, host: Host, listed: dict[str, dict[int, ProcessRef]]) -> None:
        """The kernel's memory for the TCP sockets of each group on `host` (one reading
        for all of them): the socket buffers PSS does not show."""
        names = [name for name, g in self.groups.items() if g.host is host and listed[name]]
        if not names:
            return
        try:
            found = host.socket_memory({name: list(listed[name].values()) for name in names})
        except Exception:  # noqa: BLE001 - a figure missing, never a sample lost
            found = None
        for name in names:
            if found and found.get(name) is not None:
                group = self.groups[name]
                group.socket_memory.append(found[name][0] / 2**20)
                group.max_sockets = max(group.max_sockets, found[name][1])

    def _read_cgroup_memory(self, name: str) -> None:
        reading = self.cgroup_memory[name]()
        kept = self.cgroup_memory_fullest.get(name)
        if reading and (kept is None or (reading.get("usage_mb") or 0)
                        >= (kept.get("usage_mb") or 0)):
            self.cgroup_memory_fullest[name] = reading

    def figures(self) -> dict[str, dict]:
        """Per group: CPU seconds, mean and peak cores, mean and peak memory (MiB, PSS)."""
        wall = max(self.ended - self.started, 1e-6)
        out = {}
        for name, g in self.groups.items():
            exact = self.cgroups.accounting(name) == CGROUP2
            cpu_s = self.cgroups.cpu_us[name] / 1e6 if exact else g.cpu_s
            out[name] = {
                "cpu_s": round(cpu_s, 3),
                "mean_cores": round(cpu_s / wall, 3),
                "peak_cores": round(g.peak_cores, 3),
                "memory_mean_mb": round(sum(g.memory) / len(g.memory), 1) if g.memory else None,
                "memory_peak_mb": round(max(g.memory), 1) if g.memory else None,
                # the first and last quarter of the window: memory that keeps growing
                "memory_first_mb": _quarter(g.memory, first=True),
                "memory_last_mb": _quarter(g.memory, first=False),
                "memory_kind": g.memory_kind or None,
                # the mean of the PSS's parts, from the readings that had them all
                "memory_split_mb": {part: round(sum(r[part] for r in g.memory_split)
                                                / len(g.memory_split), 1)
                                    for part in g.memory_split[0]} if g.memory_split else None,
                # the kernel's socket buffers (not in PSS): mean and peak over the
                # memory readings, and the most TCP sockets held at one
                "socket_memory_mb": {
                    "mean": round(sum(g.socket_memory) / len(g.socket_memory), 2),
                    "peak": round(max(g.socket_memory), 2),
                    "sockets": g.max_sockets} if g.socket_memory else None,
                "processes": g.max_processes,
                "accounting": self.cgroups.accounting(name),
                "accounting_note": self.cgroups.why_not.get(name),
            }
        if self.machine.figures:
            out["machine"] = self.machine.figures
        out["window_s"] = round(wall, 3)
        out["readings"] = self.readings
        return out


ROLES = ("server", "database", "proxy", "client")


def add_cost(resources: dict, requests: int | None) -> None:
    """CPU-µs per request answered in the window, per role and for the whole machine
    (None when nothing was answered: no cost can be divided out of nothing)."""
    def per_request(cpu_s):
        return round(cpu_s * 1e6 / requests, 1) if requests and cpu_s is not None else None
    for role in ROLES:
        if resources.get(role):
            resources[role]["cpu_us_per_request"] = per_request(resources[role]["cpu_s"])
    for figures in (resources.get("machine") or {}).values():
        # not idle, not busy: /proc/stat's busy fields are tick-sampled and miss much of
        # a fixed rate's short timer-paced bursts (measured: 2.62 s busy against 2.73 s
        # in the roles' cgroups and 3.46 s not idle); idle is timed exactly
        figures["cpu_us_per_request"] = per_request(figures.get("not_idle_cpu_s",
                                                                figures["busy_cpu_s"]))
        figures["busy_cpu_us_per_request"] = per_request(figures["busy_cpu_s"])
        figures["requests"] = requests


def _quarter(readings: list[float], first: bool) -> float | None:
    """Mean of the first (or last) quarter of the memory readings, at least one."""
    if not readings:
        return None
    n = max(1, len(readings) // 4)
    part = readings[:n] if first else readings[-n:]
    return round(sum(part) / len(part), 1)


class ConnectionSpread:
    """How the client's connections are spread over a server's worker processes, read
    `at_s` into the measured window (a context manager around it).

    A multi-process server whose workers share one listening socket may let one worker
    accept far more than its share of wrk's connections at start; that worker's requests
    then queue for its CPU and its pool while others idle, which shows up as tail latency
    that measures the configuration, not the framework.

    `expect`: how many connections the client holds open (keep-alive, nothing in between);
    when the reading at `at_s` finds fewer accepted (on a loaded machine a worker may not
    have got the CPU to accept yet), it is read again every RECHECK_S until all are seen or
    `until_s`, so the figure says where the connections went, not how late they were."""

    RECHECK_S = 0.05

    def __init__(self, server, at_s: float, host: Host = LOCAL, *,
                 expect: int | None = None, until_s: float | None = None,
                 port: int | None = None):
        self.server, self.host, self.expect = server, host, expect
        # where the client connects: the server's port, or its own listener of the
        # case's protocol (bench.infra.native)
        self.port = port or server.settings.port
        self.at_s, self.until_s = at_s, max(at_s, until_s or at_s)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self.per_process: dict[int, int] | None = None
        self.total: int | None = None

    def __enter__(self) -> "ConnectionSpread":
        self._started = time.monotonic()
        self._thread.start()
        return self

    def client_started(self) -> None:
        """The client is running: `at_s` and `until_s` count from now rather than from
        the context's start (a generator that takes long to start on a loaded machine
        would otherwise be read before it had connected)."""
        self._started = time.monotonic()

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _watch(self) -> None:
        while True:          # until at_s after the latest start (client_started moves it)
            left = self._started + self.at_s - time.monotonic()
            if left <= 0:
                break
            if self._stop.wait(left):
                return
        self._read()
        deadline = self._started + self.until_s
        while (self.expect is not None and (self.total or 0) < self.expect
               and time.monotonic() < deadline and not self._stop.wait(self.RECHECK_S)):
            self._read()

    def _read(self) -> None:
        port = self.port
        try:
            if self.server.spec.worker_check.count == "processes":
                per_process = self.host.connections_on_port(
                    self.server.worker_processes(), port)
                total = sum(per_process.values())
            else:
                per_process = None
                tree = self.host.tree(self.server.proc.pid)
                total = sum(self.host.connections_on_port(tree, port).values())
        except Exception:  # noqa: BLE001 - a figure missing, never a sample lost
            return
        if self._stop.is_set():
            # the window ended while the processes were read: the last ones may have been
            # read after the client closed its connections, so this is no reading of the
            # window (an earlier one, if any, stays the figure)
            return
        self.per_process, self.total = per_process, total

    def figures(self) -> dict | None:
        """{total, expected, per_worker (sorted, largest first), min, max} or None if not
        read. `expected`: the connections the client holds (None: unknown); a total below
        it is a reading that missed some (a loaded machine's worker had not accepted yet
        by the window's end), which says nothing of how they were spread."""
        if self.total is None:
            return None
        base = {"total": self.total, "expected": self.expect}
        if self.per_process is None:
            return {**base, "per_worker": None, "min": None, "max": None}
        counts = sorted(self.per_process.values(), reverse=True)
        return {**base, "per_worker": counts,
                "min": min(counts, default=0), "max": max(counts, default=0)}
