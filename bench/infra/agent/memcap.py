"""A memory cap for one role's program: a memory cgroup with a limit, in which the
program is born (bench.infra.seam.born_in writes its own pid into the cgroup and then
execs the program, same pid), so every page it touches is charged there from its first
instruction: a process moved in later would leave what it had already allocated charged
where it was. The host-side steps (run here by LocalHost.call, elsewhere by the agent).

Where, in this order:
- cgroup v2, when its memory controller can be enabled below the mount (memory.max,
  memory.swap.max 0): <mount>/webbench/<owner>/<name>, beside the CPU cgroups of
  bench/infra/agent/cgroup.py (the same owner folder, so the same leftover removal);
- the cgroup v1 memory hierarchy (memory.limit_in_bytes, and memory.memsw.limit_in_bytes
  where swap is accounted, so that the cap cannot be escaped into swap), nested *below
  the harness's own memory cgroup* so that a service manager's or a sandbox's limit
  above it still holds: <mount><own>/webbench/<owner>/<name>.

What a cap tells, read while or after the program runs: OOM kills (v2 memory.events,
v1 memory.oom_control), usage now and at its peak, and the split of the charge into the
program's own anonymous memory, page cache, kernel socket buffers and other kernel
memory (memory.stat; v1 counts socket buffers only once its TCP limit is set, which
memcap_open does, at the cap).
"""
from __future__ import annotations

import os

from . import cgroup, procfs

V2, V1 = "cgroup2 memory.max", "cgroup v1 memory.limit_in_bytes"
MIB = 2**20


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _v2_enable(mount: str, folders: list[str]) -> str | None:
    """Turn the memory controller on for the children of the mount and of each folder
    (made as needed, in order); why not, or None once on."""
    try:
        if "memory" not in procfs.read_text(os.path.join(mount, "cgroup.controllers")).split():
            return "the cgroup v2 hierarchy has no memory controller"
        for parent in [mount, *folders]:
            os.makedirs(parent, exist_ok=True)
            control = os.path.join(parent, "cgroup.subtree_control")
            if "memory" not in procfs.read_text(control).split():
                _write(control, "+memory")
    except OSError as exc:
        return f"cannot enable the memory controller under {mount}: {exc.strerror or exc}"
    return None


def _v1_folder(name: str) -> tuple[str | None, str]:
    """The v1 folder for `name` below this process's own memory cgroup, or None and why."""
    mount = procfs.cgroup1_mount("memory")
    own = procfs.cgroup1_of(os.getpid(), "memory")
    if mount is None or own is None:
        return None, "no memory cgroup hierarchy is mounted (neither v2's controller nor v1's)"
    return os.path.join(mount, own.lstrip("/"), cgroup.BASE, cgroup._owner(), name), ""


def memcap_open(name: str, limit_mb: float) -> dict:
    """A fresh memory cgroup `name` capped at `limit_mb` MiB: {"path", "procs" (the file a
    process writes its pid into to join), "kind", "limit_mb"}, or {"unavailable": why}."""
    limit = str(int(limit_mb * MIB))
    mount = procfs.cgroup2_mount()
    why_not_v2 = "no cgroup2 hierarchy is mounted"
    if mount is not None:
        owner = os.path.join(mount, cgroup.BASE, cgroup._owner())
        why_not_v2 = _v2_enable(mount, [os.path.dirname(owner), owner])
        if why_not_v2 is None:
            path = os.path.join(owner, name)
            try:
                os.mkdir(path)
                _write(os.path.join(path, "memory.max"), limit)
                if os.path.exists(os.path.join(path, "memory.swap.max")):
                    _write(os.path.join(path, "memory.swap.max"), "0")
                return {"path": path, "procs": os.path.join(path, "cgroup.procs"), "kind": V2,
                        "limit_mb": limit_mb}
            except OSError as exc:
                memcap_close(path)
                why_not_v2 = f"cannot make a capped cgroup under {mount}: {exc.strerror or exc}"
    path, why = _v1_folder(name)
    if path is None:
        return {"unavailable": f"{why_not_v2}; {why}"}
    try:
        os.makedirs(path)
        _write(os.path.join(path, "memory.limit_in_bytes"), limit)
        if os.path.exists(os.path.join(path, "memory.memsw.limit_in_bytes")):
            _write(os.path.join(path, "memory.memsw.limit_in_bytes"), limit)
    except OSError as exc:
        memcap_close(path)
        return {"unavailable": f"{why_not_v2}; cannot make a capped memory cgroup (v1) at "
                               f"{path}: {exc.strerror or exc}"}
    try:
        # v1 charges socket buffers to a cgroup only once its TCP limit is set
        _write(os.path.join(path, "memory.kmem.tcp.limit_in_bytes"), limit)
    except OSError:
        pass
    return {"path": path, "procs": os.path.join(path, "cgroup.procs"), "kind": V1,
            "limit_mb": limit_mb}


def _number(path: str) -> int | None:
    try:
        return int(procfs.read_text(path).split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _keyed(path: str) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in (line.split()[:2] for line in
                                       procfs.read_text(path).splitlines() if line.strip())}
    except (OSError, ValueError):
        return {}


def _mb(value: int | None) -> float | None:
    return None if value is None else round(value / MIB, 2)


def memcap_read(path: str, kind: str) -> dict:
    """What the cap's cgroup holds now: {"oom_kills", "usage_mb", "peak_mb", "anon_mb",
    "file_mb", "sock_mb", "kernel_mb"} (None: this kernel does not give it)."""
    join = lambda name: os.path.join(path, name)  # noqa: E731
    if kind == V2:
        stat = _keyed(join("memory.stat"))
        return {"oom_kills": _keyed(join("memory.events")).get("oom_kill"),
                "usage_mb": _mb(_number(join("memory.current"))),
                "peak_mb": _mb(_number(join("memory.peak"))),
                "anon_mb": _mb(stat.get("anon")), "file_mb": _mb(stat.get("file")),
                "sock_mb": _mb(stat.get("sock")), "kernel_mb": _mb(stat.get("kernel"))}
    stat = _keyed(join("memory.stat"))
    anon = None if "rss" not in stat else stat["rss"] + stat.get("rss_huge", 0)
    return {"oom_kills": _keyed(join("memory.oom_control")).get("oom_kill"),
            "usage_mb": _mb(_number(join("memory.usage_in_bytes"))),
            "peak_mb": _mb(_number(join("memory.max_usage_in_bytes"))),
            "anon_mb": _mb(anon), "file_mb": _mb(stat.get("cache")),
            "sock_mb": _mb(_number(join("memory.kmem.tcp.usage_in_bytes"))),
            "kernel_mb": _mb(_number(join("memory.kmem.usage_in_bytes")))}


def memcap_close(path: str) -> bool:
    """Remove the cap's cgroup, moving what still runs there (nothing, after a stop) to the
    harness's own cgroup first; then its owner folder once empty. False if it is kept."""
    own = os.path.dirname(os.path.dirname(os.path.dirname(path)))   # <own>/webbench/<owner>/<name>
    if cgroup.empty_and_remove([path], os.path.join(own, "cgroup.procs")):
        return False
    try:
        os.rmdir(os.path.dirname(path))
    except OSError:
        pass                          # another cgroup of this owner is still in it
    return True


def memcap_remove_leftovers() -> list[str]:
    """The v1 memory cgroups of owners that no longer run (a killed harness's), below this
    process's own memory cgroup; removed. (The v2 ones share the CPU cgroups' owner folders
    and go with cgroup.cgroup_remove_leftovers.)"""
    folder, _ = _v1_folder("x")
    if folder is None:
        return []
    base = os.path.dirname(os.path.dirname(folder))                # <own>/webbench
    return cgroup.remove_dead_owners(base, os.path.join(os.path.dirname(base), "cgroup.procs"))
