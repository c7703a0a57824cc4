"""The processes and the TCP counters of this host, read from /proc: the one place in
bench/ that opens a /proc path (LocalHost reads the rest through psutil).

A process is named by [pid, start] where `start` is its start time in clock ticks since
boot (field 22 of /proc/<pid>/stat): a pid reused by another process has another start,
so every operation on [pid, start] leaves a reused pid alone."""
from __future__ import annotations

import os
import re
import time

CLK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
# /proc/<pid>/stat field n (1-based, as in proc(5)) is stat(pid)[n - 3]
STATE, PPID, PGRP, SESSION, UTIME, STIME, STARTTIME = 0, 1, 2, 3, 11, 12, 19
STATUS = {"R": "running", "S": "sleeping", "D": "disk-sleep", "Z": "zombie", "T": "stopped",
          "t": "tracing-stop", "X": "dead", "x": "dead", "I": "idle", "K": "wake-kill",
          "W": "waking", "P": "parked"}
GONE = "ZXx"          # states of a process that holds no port, file or folder any more


def read_text(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")


def _stat_text(pid: int) -> str:
    with open("/proc/%d/stat" % pid, "rb") as f:
        return f.read().decode("ascii", "replace")


def stat(pid: int) -> list[str]:
    """/proc/<pid>/stat's fields after the name (see the field indices above)."""
    data = _stat_text(pid)
    return data[data.rindex(")") + 2:].split()     # the name may hold spaces and parens


def started(pid: int) -> int | None:
    """The process's start (clock ticks since boot), None when there is no such pid."""
    try:
        return int(stat(pid)[STARTTIME])
    except (OSError, ValueError, IndexError):
        return None


def all_stats() -> dict[int, list[str]]:
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                out[int(name)] = stat(int(name))
            except (OSError, ValueError):
                pass
    return out


def tree(pid: int) -> list[list[int]]:
    """[pid, start] of pid and all its descendants (pid first, breadth first)."""
    stats = all_stats()
    if pid not in stats:
        return []
    kids: dict[int, list[int]] = {}
    for p, st in stats.items():
        kids.setdefault(int(st[PPID]), []).append(p)
    out, queue = [], [pid]
    while queue:
        p = queue.pop(0)
        out.append([p, int(stats[p][STARTTIME])])
        queue.extend(sorted(kids.get(p, [])))
    return out


def status(refs: list) -> list[str | None]:
    """Each [pid, start]'s state ("running", "zombie", ...), None when it is gone."""
    out = []
    for pid, start in refs:
        try:
            st = stat(pid)
        except OSError:
            out.append(None)
            continue
        out.append(STATUS.get(st[STATE], st[STATE]) if int(st[STARTTIME]) == start else None)
    return out


def task_ids(pid: int) -> list[int]:
    """The thread ids of a process ([] once it is gone)."""
    try:
        return [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    except OSError:
        return []


def thread_names(pid: int) -> list[str]:
    """The names of a process's threads (what `ps -L` and `top -H` show)."""
    names = []
    for tid in task_ids(pid):
        try:
            names.append(read_text("/proc/%d/task/%d/comm" % (pid, tid)).rstrip("\n"))
        except OSError:
            pass
    return names


def pin(pid: int, cpus: list[int]) -> None:
    """Every thread of a running process to `cpus` (threads it starts later inherit the
    mask of the thread that starts them, processes it forks too)."""
    for tid in task_ids(pid):
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:
            pass


def affinity(pid: int) -> list[int] | None:
    try:
        return sorted(os.sched_getaffinity(pid))
    except (ProcessLookupError, PermissionError):
        return None


def cmdline(pid: int, start: int) -> str:
    """As psutil reads it (also for a process that rewrote its title with spaces)."""
    if started(pid) != start:
        return ""
    try:
        data = read_text("/proc/%d/cmdline" % pid)
    except OSError:
        return ""
    if not data:
        return ""
    sep = "\0" if data.endswith("\0") else " "
    if data.endswith(sep):
        data = data[:-1]
    parts = data.split(sep)
    if sep == "\0" and len(parts) == 1 and " " in data:
        parts = data.split(" ")
    return " ".join(parts)


def environ(pid: int, start: int) -> list[str]:
    """A process's environment as NAME=value lines ([] when unreadable)."""
    if started(pid) != start:
        return []
    try:
        data = read_text("/proc/%d/environ" % pid)
    except OSError:
        return []
    return [line for line in data.split("\0") if line and line.find("=") > 0]


def _sockets(table: str, state: str, port: int) -> set[str]:
    """Inodes ("socket:[n]") of the TCP sockets in `state` on local `port`, from the
    tables under `table` (/proc/net or /proc/<pid>/net)."""
    found = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = read_text("%s/%s" % (table, name)).splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == state and int(f[1].rsplit(":", 1)[1], 16) == port:
                found.add("socket:[%s]" % f[9])
    return found


def socket_inodes(pid: int) -> set[str]:
    """The sockets among the process's open files, as their fd links name them
    ("socket:[n]"); empty once it is gone."""
    found = set()
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return found
    for fd in fds:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target)
    return found


def _holds(pid: int, sockets: set[str]) -> int:
    """How many of `sockets` the process has open."""
    return len(socket_inodes(pid) & sockets)


def connections(refs: list, port: int) -> dict[str, int]:
    """Established TCP connections each [pid, start] holds on local `port` (a server's
    accepted clients), by pid (as a string: the answer is JSON)."""
    by_namespace: dict[str, set[str]] = {}
    counts = {}
    for pid, start in refs:
        if started(pid) != start:
            continue
        try:
            namespace = os.readlink("/proc/%d/ns/net" % pid)
        except OSError:
            continue
        if namespace not in by_namespace:
            by_namespace[namespace] = _sockets("/proc/%d/net" % pid, "01", port)
        counts[str(pid)] = _holds(pid, by_namespace[namespace])
    return counts


def run_ns(pids: list[int]) -> int:
    """Nanoseconds the threads of `pids` have run on a CPU so far (the scheduler's own
    account, /proc/<pid>/task/<tid>/schedstat): unchanged over a span, the processes did
    nothing in it (what a count waits for between two requests, bench.runner.count)."""
    total = 0
    for pid in pids:
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            try:
                total += int(read_text("/proc/%d/task/%s/schedstat" % (pid, tid)).split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return total


# ESTABLISHED and CLOSE_WAIT: a connection its server still holds open (in CLOSE_WAIT the
# client has closed and the server has not got round to it yet)
HELD = ("01", "08")


def held_connections(port: int) -> int:
    """TCP connections on local `port` whose server side is still open, in this network
    namespace: 0 once the server has closed every connection a client closed (what a
    count waits for before it opens a window, bench.runner.count)."""
    return sum(len(_sockets("/proc/net", state, port)) for state in HELD)


def listeners(port: int) -> list[str]:
    """`pid command` of whatever listens on TCP `port` in this network namespace."""
    sockets = _sockets("/proc/net", "0A", port)
    out = set()
    for name in os.listdir("/proc") if sockets else []:
        if name.isdigit() and _holds(int(name), sockets):
            try:
                command = read_text("/proc/%s/cmdline" % name).replace("\0", " ").strip()
                out.add("pid %s `%s`" % (name, command[:120]))
            except OSError:
                out.add("pid %s" % name)
    return sorted(out)


SPLIT = {b"Pss_Anon:": "anon", b"Pss_File:": "file", b"Pss_Shmem:": "shmem"}


def memory_of(pid: int) -> list | None:
    """[MiB, kind, split]: PSS from smaps_rollup, RSS when that is not readable; None if
    gone. `split`: the PSS's parts in MiB, {"anon": the process's own (heap, stacks),
    "file": mapped files (code, libraries), "shmem": shared memory}, from smaps_rollup's
    Pss_Anon / Pss_File / Pss_Shmem (Linux 5.8+), None where they are not given."""
    try:
        with open("/proc/%d/smaps_rollup" % pid, "rb") as f:
            pss, split = None, {}
            for line in f:
                key = line.split(b" ", 1)[0]
                if key == b"Pss:":
                    pss = int(line.split()[1]) / 1024
                elif key in SPLIT:
                    split[SPLIT[key]] = int(line.split()[1]) / 1024
            if pss is not None:
                return [pss, "pss", split if len(split) == len(SPLIT) else None]
    except (OSError, ValueError, IndexError):
        pass
    try:
        return [int(read_text("/proc/%d/statm" % pid).split()[1]) * PAGE / 2**20, "rss", None]
    except (OSError, ValueError, IndexError):
        return None


def read(refs: list, memory: bool) -> list:
    """[cpu seconds, MiB or None, kind] of each [pid, start] (None once gone): CPU is
    (utime + stime) / CLK_TCK of /proc/<pid>/stat, what psutil reads."""
    out = []
    for pid, start in refs:
        try:
            st = stat(pid)
            if int(st[STARTTIME]) != start:
                out.append(None)
                continue
            cpu = (int(st[UTIME]) + int(st[STIME])) / CLK
        except (OSError, ValueError, IndexError):
            out.append(None)
            continue
        if not memory:
            out.append([cpu, None, "", None])
            continue
        mem = memory_of(pid)
        out.append([cpu] + mem if mem else None)
    return out


def passive_opens() -> int:
    """TCP connections this network namespace has accepted so far (the kernel's
    PassiveOpens counter in /proc/net/snmp)."""
    lines = read_text("/proc/net/snmp").splitlines()
    names, values = [line.split() for line in lines if line.startswith("Tcp:")][:2]
    return int(values[names.index("PassiveOpens")])


def session_members(leaders: list, exclude: int) -> list[int]:
    """Live processes of the sessions these [pid, start] leaders opened (a member cannot
    have started before its leader, which tells a reused pid apart); `exclude`: a pid
    never counted (the caller's own)."""
    found = []
    for pid, st in all_stats().items():
        if st[STATE] in GONE or pid == exclude:
            continue
        for leader, start in leaders:
            if int(st[SESSION]) == leader and start is not None and int(st[STARTTIME]) >= start:
                found.append(pid)
    return found


def names_folder(arg: str, folder: str) -> bool:
    """`arg` is, or sets an option to, `folder` or a path inside it."""
    return re.search(r"(^|[=\s])%s(/|\s|$)" % re.escape(folder), arg) is not None


def in_folder(path: str, folder: str) -> bool:
    # the kernel shows a deleted working directory as "<path> (deleted)"
    path = path.removesuffix(" (deleted)")
    return path == folder or path.startswith(folder + "/")


def server_processes(folders: list[str], data: str, names: list[str]) -> list[list]:
    """[pid, of the data folder, its arguments name the data folder] of every live
    process called one of `names` (postgres, mariadbd, ...) whose working directory is
    in one of `folders` or whose arguments name one: a postmaster and its backends
    (their cwd is the data folder), mysqld (--datadir=...). Whoever started them."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            text = _stat_text(int(entry))
            name = text[text.index("(") + 1:text.rindex(")")]
            if text[text.rindex(")") + 2:].split()[0] in GONE or name not in names:
                continue
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                args = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        except (OSError, ValueError, IndexError):
            continue
        try:
            cwd = os.readlink("/proc/%s/cwd" % entry)
        except OSError:
            cwd = ""
        names_data = any(names_folder(a, data) for a in args)
        if names_data or any(in_folder(cwd, f) or any(names_folder(a, f) for a in args)
                             for f in folders):
            found.append([int(entry), names_data or in_folder(cwd, data), names_data])
    return sorted(found)


def cpu_model() -> str | None:
    try:
        for line in read_text("/proc/cpuinfo").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def memory_total_kb() -> int | None:
    try:
        for line in read_text("/proc/meminfo").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def cgroup2_mount() -> str | None:
    """Where the cgroup v2 hierarchy is mounted here (/sys/fs/cgroup on most machines,
    /sys/fs/cgroup/unified beside a v1 hierarchy), None when it is not mounted."""
    try:
        for line in read_text("/proc/mounts").splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[2] == "cgroup2":
                return fields[1]
    except OSError:
        pass
    return None


def cgroup1_mount(controller: str) -> str | None:
    """Where the cgroup v1 hierarchy of `controller` (e.g. "memory") is mounted, None when
    it is not (a machine with cgroup v2 only)."""
    try:
        for line in read_text("/proc/mounts").splitlines():
            fields = line.split()
            if len(fields) > 3 and fields[2] == "cgroup" and controller in fields[3].split(","):
                return fields[1]
    except OSError:
        pass
    return None


def cgroup1_of(pid: int, controller: str) -> str | None:
    """A process's cgroup in the v1 hierarchy of `controller`, below its mount; None when
    the process is gone or that hierarchy does not exist."""
    try:
        for line in read_text("/proc/%d/cgroup" % pid).splitlines():
            _, names, path = line.split(":", 2)
            if controller in names.split(","):
                return path
    except (OSError, ValueError):
        pass
    return None


def cgroup_of(pid: int) -> str | None:
    """A process's cgroup v2 path below the mount ("/" for the root), None once gone."""
    try:
        for line in read_text("/proc/%d/cgroup" % pid).splitlines():
            if line.startswith("0::"):
                return line[3:]
    except OSError:
        pass
    return None


def machine_cpu_us() -> dict:
    """The whole machine's CPU time so far, all CPUs, in µs (the first line of /proc/stat):
    busy = user + nice + system + irq + softirq (guest time is inside user already);
    steal (what a hypervisor gave to others) and idle (idle + iowait) apart; `at` the
    monotonic clock (µs) when read, `cpus` the CPUs /proc/stat counts.

    The busy fields are sampled on the timer tick (a tick that finds a CPU running counts
    a whole tick), while idle on a tickless kernel is timed exactly: for load that wakes
    in step with timers (a fixed-rate generator) busy can be off by much, and
    cpus × elapsed − idle is the better figure of the two."""
    lines = read_text("/proc/stat").splitlines()
    at = time.monotonic()
    t = machine_cpu_ticks(lines[0])
    scale = 1_000_000 / CLK
    return {"busy": round((t["user"] + t["nice"] + t["system"] + t["irq"] + t["softirq"])
                          * scale),
            "steal": round(t["steal"] * scale), "idle": round((t["idle"] + t["iowait"]) * scale),
            "cpus": sum(1 for line in lines[1:] if re.match(r"cpu\d", line)),
            "at": round(at * 1_000_000)}


# /proc/stat's aggregate "cpu" line, in its order (proc(5)); guest time is already in user
STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def machine_cpu_ticks(line: str | None = None) -> dict[str, int]:
    """The machine's CPU time so far by kind (STAT_FIELDS), in clock ticks, from the
    first line of /proc/stat (read now when not given); a kind the kernel does not
    report (steal on an old one) is 0."""
    fields = (line or read_text("/proc/stat").splitlines()[0]).split()[1:]
    values = [int(v) for v in fields[:len(STAT_FIELDS)]]
    return dict(zip(STAT_FIELDS, values + [0] * (len(STAT_FIELDS) - len(values))))
