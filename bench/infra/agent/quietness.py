"""How quiet this host is, read where it runs (LocalHost calls these in-process, a
RemoteHost's agent there): the CPU counters a later reading is subtracted from, and the
settings of the CPU, memory, network and kernel that shape a measurement.

A figure the host does not expose is {"unavailable": why}, never a guess: a VM often
has no cpufreq folder at all, so neither its governor nor its turbo can be known."""
from __future__ import annotations

import glob
import os
import time

from . import procfs

CPU = "/sys/devices/system/cpu"
# /proc/<pid>/stat fields 16 and 17 (cutime, cstime), as procfs.stat() indexes them
CUTIME, CSTIME = 13, 14


def _text(path: str) -> str | None:
    try:
        return procfs.read_text(path).strip()
    except OSError:
        return None


def _unavailable(why: str) -> dict:
    return {"unavailable": why}


# ------------------------------------------------------------------ counters
def cpu_snapshot() -> dict:
    """Counters to subtract a later snapshot from: the machine's CPU ticks by kind,
    every process's [name, ppid, start, own ticks, waited-for children's ticks], and the
    pids of this process's tree (the harness here; on another host the agent, which
    started the roles there). Ticks are 1/`hz` s; `uptime_ticks` dates the snapshot."""
    machine = procfs.machine_cpu_ticks()
    procs: dict[str, list] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            raw = procfs.read_text(f"/proc/{name}/stat")
            comm = raw[raw.index("(") + 1:raw.rindex(")")]
            st = raw[raw.rindex(")") + 2:].split()
            procs[name] = [comm, int(st[procfs.PPID]), int(st[procfs.STARTTIME]),
                           int(st[procfs.UTIME]) + int(st[procfs.STIME]),
                           int(st[CUTIME]) + int(st[CSTIME])]
        except (OSError, ValueError, IndexError):
            continue                   # gone meanwhile
    uptime = float((_text("/proc/uptime") or "0").split()[0])
    return {"at": time.monotonic(), "uptime_ticks": int(uptime * procfs.CLK),
            "hz": procfs.CLK, "cpus": os.cpu_count() or 1, "machine": machine,
            "procs": procs, "harness": _tree_of(os.getpid(), procs)}


def _tree_of(root: int, procs: dict[str, list]) -> list[int]:
    kids: dict[int, list[int]] = {}
    for pid, entry in procs.items():
        kids.setdefault(entry[1], []).append(int(pid))
    out, queue = [], [root]
    while queue:
        pid = queue.pop()
        out.append(pid)
        queue.extend(kids.get(pid, []))
    return sorted(out)


# ------------------------------------------------------------------ settings
def machine_state() -> dict:
    """What shapes a measurement besides the code: frequency scaling, SMT, memory and
    its pressure, CPU pressure, the loopback MTU, the CPU-vulnerability mitigations."""
    return {"cpu_governor": governor(), "turbo": turbo(), "smt": smt(),
            "memory": memory(), "pressure": pressure(),
            "loopback_mtu": _int_or_unavailable("/sys/class/net/lo/mtu"),
            "mitigations": mitigations()}


def governor() -> dict:
    """The frequency governor of each CPU, grouped: {"performance": [0, 1]}."""
    found: dict[str, list[int]] = {}
    for path in sorted(glob.glob(f"{CPU}/cpu[0-9]*/cpufreq/scaling_governor")):
        value = _text(path)
        if value:
            found.setdefault(value, []).append(int(path.split("/")[5][3:]))
    if not found:
        return _unavailable(f"no {CPU}/cpu*/cpufreq/scaling_governor: the kernel exposes no "
                            f"frequency scaling here (a VM, or no cpufreq driver)")
    return {"governors": found}


def turbo() -> dict:
    """Turbo/boost: intel_pstate's no_turbo, else cpufreq's boost (acpi-cpufreq, AMD)."""
    no_turbo = _text(f"{CPU}/intel_pstate/no_turbo")
    if no_turbo is not None:
        return {"enabled": no_turbo == "0", "source": f"{CPU}/intel_pstate/no_turbo"}
    boost = _text(f"{CPU}/cpufreq/boost")
    if boost is not None:
        return {"enabled": boost == "1", "source": f"{CPU}/cpufreq/boost"}
    return _unavailable(f"neither {CPU}/intel_pstate/no_turbo nor {CPU}/cpufreq/boost "
                        f"exists: the frequency driver does not expose turbo here")


def smt() -> dict:
    control, active = _text(f"{CPU}/smt/control"), _text(f"{CPU}/smt/active")
    if control is None:
        return _unavailable(f"no {CPU}/smt/control (a kernel before 4.19?)")
    return {"control": control, "active": active == "1" if active is not None else None}


def memory() -> dict:
    info = {}
    for line in (_text("/proc/meminfo") or "").splitlines():
        name, _, rest = line.partition(":")
        if name in ("MemTotal", "MemAvailable", "SwapTotal", "SwapFree"):
            info[name] = round(int(rest.split()[0]) / 1024, 1)
    if "MemAvailable" not in info:
        return _unavailable("/proc/meminfo holds no MemAvailable")
    return {"total_mb": info.get("MemTotal"), "available_mb": info["MemAvailable"],
            "swap_used_mb": round(info.get("SwapTotal", 0) - info.get("SwapFree", 0), 1)}


def pressure() -> dict:
    """PSI: the share of time some (or all) tasks waited for the CPU or memory, averaged
    over 10 and 60 s, and the total µs waited (a difference of two readings is exact)."""
    out = {}
    for resource in ("cpu", "memory"):
        text = _text(f"/proc/pressure/{resource}")
        if text is None:
            out[resource] = _unavailable(f"no /proc/pressure/{resource}: the kernel has no "
                                         f"PSI (CONFIG_PSI, or psi=0 on its command line)")
            continue
        out[resource] = {}
        for line in text.splitlines():
            kind, *pairs = line.split()
            values = dict(pair.split("=") for pair in pairs)
            out[resource][kind] = {"avg10": float(values["avg10"]),
                                   "avg60": float(values["avg60"]),
                                   "total_us": int(values["total"])}
    return out


def mitigations() -> dict:
    """Each CPU vulnerability's state as the kernel reports it, and the command line's
    mitigations= (the switch that turns them all off or on)."""
    found = {os.path.basename(p): _text(p)
             for p in sorted(glob.glob(f"{CPU}/vulnerabilities/*"))}
    cmdline = (_text("/proc/cmdline") or "").split()
    switch = next((arg.split("=", 1)[1] for arg in cmdline if arg.startswith("mitigations=")),
                  None)
    return {"vulnerabilities": found or _unavailable(f"no {CPU}/vulnerabilities"),
            "cmdline": switch if switch is not None else "not set (the kernel's default)"}


def _int_or_unavailable(path: str):
    value = _text(path)
    return int(value) if value and value.isdigit() else _unavailable(f"no {path}")
