"""The operations that run the same on any host, by name: LocalHost.call runs them in
this process, RemoteHost.call has its agent run them there (service.py), so a caller such
as the throwaway databases writes each step once, for every host."""
from __future__ import annotations

import os
import platform
import socket

from . import cgroup, files, memcap, network, procfs, programs, quietness


def send_signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def survey(folders: list[str], data: str, pid_file: str, names: list[str]) -> dict:
    """The pid in a database server's pid file and the server processes of its folders
    (see procfs.server_processes)."""
    try:
        with open(pid_file) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pid = None
    return {"pid_file": pid, "procs": procfs.server_processes(folders, data, names)}


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def usable_cpus() -> int:
    """CPUs a process may really use here: the affinity mask, capped by a cgroup v2 CPU
    quota (what bench.core.settings.usable_cpus says of the harness's own machine; the
    agent cannot import it on another host)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    try:
        quota, period = _read("/sys/fs/cgroup/cpu.max").split()[:2]
        if quota != "max":
            usable = min(usable, max(1, int(quota) // int(period)))
    except (AttributeError, ValueError):
        pass
    return max(1, usable)


def machine() -> dict:
    """The machine's part of a run's environment block, and the Python this runs on."""
    mhz = None
    for name in ("scaling_max_freq", "cpuinfo_max_freq"):
        value = _read("/sys/devices/system/cpu/cpu0/cpufreq/" + name)
        if value:
            mhz = round(int(value) / 1000)
            break
    mem_kb = procfs.memory_total_kb()
    return {"hostname": socket.gethostname(), "os": platform.platform(),
            "kernel": platform.release(), "cpu_model": procfs.cpu_model(),
            "cpu_count": os.cpu_count(), "cpus_usable": usable_cpus(),
            "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "cpu_mhz_max": mhz, "memory_gb": round(mem_kb / 2**20, 1) if mem_kb else None,
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version()}


STEPS = {
    "euid": files.euid, "make_temp_folder": files.make_temp_folder,
    "make_folder": files.make_folder, "write_file": files.write_file,
    "append": files.append, "tail_file": files.tail_file, "remove": files.remove,
    "sizes": files.sizes,
    "send_signal": send_signal, "survey": survey,
    "server_processes": procfs.server_processes, "listeners": procfs.listeners,
    "held_connections": procfs.held_connections, "run_ns": procfs.run_ns,
    "postgres_bindir": programs.postgres_bindir, "mysqld_binaries": programs.mysqld_binaries,
    "rtt": network.rtt, "machine": machine,
    "cpu_snapshot": quietness.cpu_snapshot, "machine_state": quietness.machine_state,
    "cgroup_open": cgroup.cgroup_open, "cgroup_place": cgroup.cgroup_place,
    "cgroup_usage": cgroup.cgroup_usage, "cgroup_close": cgroup.cgroup_close,
    "cgroup_remove_leftovers": cgroup.cgroup_remove_leftovers,
    "memcap_open": memcap.memcap_open, "memcap_read": memcap.memcap_read,
    "memcap_close": memcap.memcap_close,
    "memcap_remove_leftovers": memcap.memcap_remove_leftovers,
    "machine_cpu_us": procfs.machine_cpu_us,
}
