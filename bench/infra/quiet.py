"""Is the machine quiet enough to measure? Two readings, both through the Host seam (so a
remote server host is read where it runs):

- `MachineWatch`: the machine's state (bench/infra/agent/quietness.py) with the CPU that
  other processes and the hypervisor (steal) took, before the run (over a short window)
  and then at each new round (since the previous reading: the whole round, for free);
- `ForeignLoad`: around one sample's measured window, the CPU used by processes that are
  neither the harness nor one of the sample's roles, as a share of the machine's CPUs,
  with the top ones named; `noise_verdict` says whether it is above the limit.

Processes are read at both ends of a window (and all their CPU counted when they started
in between); a process that started and ended inside the window is seen only through its
parent's count of waited-for children, so a foreign short-lived job (a compiler under
make) is charged to its parent, and one whose parent does not wait for it is missed.
"""
from __future__ import annotations

import time
from typing import Callable, Iterable

from bench.infra.host import Host

TOP = 5                        # offenders named per reading
FIRST_WINDOW_S = 0.5           # the reading before the run: long enough for 50 ticks of a hog
BUSY = ("user", "nice", "system", "irq", "softirq")


def _snapshot(host: Host) -> dict:
    return host.call("cpu_snapshot")


def foreign_load(before: dict, after: dict, exclude: Iterable[int] = ()) -> dict:
    """The CPU between two snapshots (bench/infra/agent/quietness.cpu_snapshot) of one host:
    the share of the machine's CPUs used by processes outside the harness's tree and
    `exclude` (the roles' pids), the top ones named, the share stolen by the hypervisor,
    and the whole machine's busy share. Shares are of window x CPUs."""
    hz, cpus = after["hz"], after["cpus"]
    window_s = max(after["at"] - before["at"], 1e-6)
    capacity = window_s * hz * cpus                       # ticks the machine had
    ours = set(before["harness"]) | set(after["harness"]) | set(exclude)
    used: dict[str, float] = {}
    for pid, (name, ppid, start, own, children) in after["procs"].items():
        if int(pid) in ours:
            continue
        then = before["procs"].get(pid)
        if then is not None and then[2] == start:
            ticks = (own + children) - (then[3] + then[4])
        elif start >= before["uptime_ticks"]:             # started inside the window
            ticks = own + children
        else:
            continue
        used[pid] = ticks
    # a child seen at the start that was reaped meanwhile comes back in its parent's
    # `children`, with what it had used before the window too: not this window's
    for pid, (name, ppid, start, own, children) in before["procs"].items():
        if pid not in after["procs"] and str(ppid) in used:
            used[str(ppid)] -= own + children
    top = sorted(((ticks, pid) for pid, ticks in used.items() if ticks > 0), reverse=True)
    m0, m1 = before["machine"], after["machine"]
    machine_ticks = sum(m1.get(k, 0) - m0.get(k, 0) for k in m1) or 1
    return {
        "window_s": round(window_s, 3), "cpus": cpus,
        "foreign_cpu_share": round(min(sum(t for t, _ in top) / capacity, 1.0), 4),
        "top": [{"name": after["procs"][pid][0], "pid": int(pid),
                 "cpu_share": round(min(ticks / capacity, 1.0), 4)}
                for ticks, pid in top[:TOP]],
        "steal_share": round((m1.get("steal", 0) - m0.get("steal", 0)) / machine_ticks, 4),
        "busy_share": round(sum(m1.get(k, 0) - m0.get(k, 0) for k in BUSY)
                            / machine_ticks, 4),
    }


def describe(noise: dict) -> str:
    """'12.0 % of the machine's CPU used by other processes (top: stress (pid 42) 11.8 %)'."""
    top = ", ".join(f"{p['name']} (pid {p['pid']}) {percent(p['cpu_share'])}"
                    for p in noise["top"])
    return (f"{percent(noise['foreign_cpu_share'])} of the machine's CPU used by other "
            f"processes"
            + (f" (top: {top})" if top else ""))


def noise_verdict(noise: dict | None, limit: float) -> str | None:
    """The warning a sample carries when foreign processes used more than `limit` of the
    machine's CPU during its window (its kind, before the colon, is the same on every
    sample, so the tables merge it into one note); None when quiet or not measured."""
    if not noise or noise.get("foreign_cpu_share") is None:
        return None
    said = []
    if noise["foreign_cpu_share"] > limit:
        said.append(describe(noise))
    if noise.get("steal_share", 0) > limit:
        said.append(f"{percent(noise['steal_share'])} of the CPU time stolen by the "
                    f"hypervisor")
    return (f"foreign load: {'; '.join(said)}, above the limit of {percent(limit, 0)}"
            if said else None)


def percent(share: float, digits: int = 1) -> str:
    return f"{share * 100:.{digits}f} %"


class ForeignLoad:
    """Around one measured window (a context manager): `figures()` afterwards is the
    noise of the sample, or {"unavailable": why} when the host could not be read.
    `roles()` gives the pids of the sample's roles on that host, read at the end (the
    load generator has exited by then: the caller keeps its pid)."""

    def __init__(self, host: Host, roles: Callable[[], Iterable[int]]):
        self.host, self.roles = host, roles
        self._before: dict | None = None
        self._result: dict | None = None

    def __enter__(self) -> "ForeignLoad":
        try:
            self._before = _snapshot(self.host)
        except Exception as exc:  # noqa: BLE001 - a figure missing, never a sample lost
            self._result = {"unavailable": f"{type(exc).__name__}: {exc}"[:200]}
        return self

    def __exit__(self, *exc) -> None:
        if self._before is None:
            return
        try:
            self._result = foreign_load(self._before, _snapshot(self.host), self.roles())
        except Exception as error:  # noqa: BLE001 - as above
            self._result = {"unavailable": f"{type(error).__name__}: {error}"[:200]}

    def figures(self) -> dict | None:
        return self._result


class MachineWatch:
    """The machine's state at the start of the run and at each new round, with the
    foreign load and steal since the reading before (the first over FIRST_WINDOW_S)."""

    def __init__(self, host: Host):
        self.host = host
        self._last: dict | None = None

    def reading(self, label: str) -> dict:
        """{"at": label, ...machine_state, "load": foreign_load(...)}; what could not be
        read is {"unavailable": why}."""
        out: dict = {"at": label}
        try:
            out.update(self.host.call("machine_state"))
            if self._last is None:
                self._last = _snapshot(self.host)
                time.sleep(FIRST_WINDOW_S)      # a window to measure over, not a wait
            now = _snapshot(self.host)
            out["load"] = foreign_load(self._last, now)
            self._last = now
        except Exception as exc:  # noqa: BLE001 - the state is informative, never fatal
            out["unavailable"] = f"{type(exc).__name__}: {exc}"[:200]
        return out
