"""Each role's processes in a cgroup v2 of their own, for the CPU they use exactly: the
host-side steps (run here by LocalHost.call, on another host by its agent).

A cgroup's `cpu.stat` (usage_usec) counts every task that ran in it, also those that
exited since (a gunicorn worker restarted mid-window), which sampling /proc between
readings loses. cgroup v2 keeps `cpu.stat` in every cgroup even where the cpu controller
is not enabled, so only a writable cgroup2 mount is needed (root, or a delegated tree).

Layout: <mount>/webbench/<owner>/<window>-<role>, where <owner> is "<pid>-<start>" of the
process that made it (the harness here, the agent on another host): folders whose owner
no longer runs are leftovers of a killed harness, removed by `cgroup_remove_leftovers`.
A window's cgroups are closed by moving what still runs in them back where it came from
and removing them, so nothing stays placed between windows.
"""
from __future__ import annotations

import errno
import os

from . import procfs

BASE = "webbench"
CLOSE_ATTEMPTS = 5        # a process forking while its group is moved out leaves a child


def _owner() -> str:
    return f"{os.getpid()}-{procfs.started(os.getpid())}"


def _base(mount: str) -> str:
    return os.path.join(mount, BASE)


def cgroup_open(window: str, roles: list[str]) -> dict:
    """A fresh cgroup per role for one window: {"paths": {role: folder}}, or
    {"unavailable": why} when cgroup v2 cannot be used here."""
    mount = procfs.cgroup2_mount()
    if mount is None:
        return {"unavailable": "no cgroup2 hierarchy is mounted (/proc/mounts)"}
    owner = os.path.join(_base(mount), _owner())
    paths = {role: os.path.join(owner, f"{window}-{role}") for role in roles}
    try:
        os.makedirs(owner, exist_ok=True)
        for path in paths.values():
            os.mkdir(path)
    except OSError as exc:
        cgroup_close(list(paths.values()), "/")
        return {"unavailable": f"cannot create a cgroup under {mount}: {exc.strerror}"}
    if not all(os.path.exists(os.path.join(p, "cpu.stat")) for p in paths.values()):
        cgroup_close(list(paths.values()), "/")
        return {"unavailable": f"the cgroups under {mount} have no cpu.stat"}
    return {"paths": paths, "mount": mount}


def _relative(path: str) -> str:
    """A cgroup folder as /proc/<pid>/cgroup names it: its path below the mount."""
    relative = os.path.relpath(path, procfs.cgroup2_mount() or "/")
    return "/" if relative == "." else "/" + relative


def cgroup_place(path: str, pids: list[int]) -> dict:
    """Move each process (all its threads) into the cgroup at `path`; what it forks later
    is born there. {"moved": pids, "homes": {pid: the cgroup it came from}, "failed":
    {pid: why}}; a process already gone is left out, one already there is not moved.
    Only processes in this process's own cgroup (what it or its children started) move."""
    inside, own = _relative(path), procfs.cgroup_of(os.getpid())
    moved, homes, failed = [], {}, {}
    for pid in pids:
        home = procfs.cgroup_of(pid)
        if home is None or home == inside:
            continue
        if home != own:
            # another manager's cgroup (a container's, a service's): moving it out would
            # take it out of that manager's limits
            failed[str(pid)] = f"it is in the cgroup {home}, not in this process's ({own})"
            continue
        try:
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(pid))
        except OSError as exc:
            if exc.errno != errno.ESRCH:        # ESRCH: it exited meanwhile
                failed[str(pid)] = exc.strerror or str(exc)
            continue
        moved.append(pid)
        homes[str(pid)] = home
    return {"moved": moved, "homes": homes, "failed": failed}


def cgroup_usage(paths: list[str]) -> dict:
    """{path: {usage_usec, user_usec, system_usec}} (None for a path that cannot be read)."""
    out = {}
    for path in paths:
        try:
            with open(os.path.join(path, "cpu.stat")) as f:
                stat = dict(line.split() for line in f if line.strip())
            out[path] = {k: int(stat[k]) for k in ("usage_usec", "user_usec", "system_usec")}
        except (OSError, ValueError, KeyError):
            out[path] = None
    return out


def _members(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs")) as f:
            return [int(line) for line in f if line.strip()]
    except OSError:
        return []


def empty_and_remove(paths: list[str], target: str) -> list[str]:
    """Move what still runs in each cgroup into the `cgroup.procs` file `target`, and
    remove the cgroups; the paths that could not be removed."""
    kept = []
    for path in paths:
        for _ in range(CLOSE_ATTEMPTS):
            for pid in _members(path):
                try:
                    with open(target, "w") as f:
                        f.write(str(pid))
                except OSError:
                    pass
            try:
                os.rmdir(path)
                break
            except FileNotFoundError:
                break
            except OSError:
                continue
        else:
            kept.append(path)
    return kept


def cgroup_close(paths: list[str], home: str) -> list[str]:
    """Move what still runs in each cgroup to `home` (a path below the mount, "/" for the
    root) and remove the cgroups, then their owner's folder once empty. Returns the
    paths that could not be removed (the next invocation's leftovers)."""
    mount = procfs.cgroup2_mount()
    kept = empty_and_remove(paths, os.path.join(mount or "/", home.lstrip("/"), "cgroup.procs"))
    for owner in {os.path.dirname(p) for p in paths}:
        try:
            os.rmdir(owner)
        except OSError:
            pass                 # another window's cgroups are still in it
    return kept


def remove_dead_owners(base: str, target: str) -> list[str]:
    """Under `base` (a webbench folder), the folders of owners that no longer run (a
    harness or agent killed before it could close its cgroups): their cgroups emptied
    into `target` (a cgroup.procs file) and removed. Returns the folders removed."""
    removed = []
    for owner in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        pid, _, start = owner.partition("-")
        if not pid.isdigit() or str(procfs.started(int(pid))) == start:
            continue                           # a live owner's, or not ours
        folder = os.path.join(base, owner)
        children = [os.path.join(folder, name) for name in os.listdir(folder)
                    if os.path.isdir(os.path.join(folder, name))]
        if empty_and_remove(children, target):
            continue
        try:
            os.rmdir(folder)
        except FileNotFoundError:
            pass
        except OSError:
            continue
        removed.append(folder)
    return removed


def cgroup_remove_leftovers() -> list[str]:
    """Remove the cgroups of owners that no longer run; what still runs in them goes to
    the root cgroup. Returns the folders removed."""
    mount = procfs.cgroup2_mount()
    if mount is None:
        return []
    return remove_dead_owners(_base(mount), os.path.join(mount, "cgroup.procs"))
