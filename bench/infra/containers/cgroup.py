"""A container's processes, as this machine sees them: the pids in its cgroup.

The database's CPU, memory and socket figures of docker mode are then read exactly as
local mode's (bench.infra.resources reads pids), from the same /proc. The cgroup is the
one docker made for the container (cgroup v1: the pids controller's folder; v2: the
unified one), found from the container's first process (`docker inspect`'s State.Pid).
Only for an engine on this machine: a container on another machine (DOCKER_HOST=ssh://)
has no pids here, and its figures are "not measured", as before.

The containerd shim that runs the container (outside its cgroup) is counted with the
database: it is work docker mode adds, not the machine's foreign load. (No userland
proxy: docker-compose.yml runs the databases on the host's network.)
"""
from __future__ import annotations

from pathlib import Path

import psutil

from bench.infra.host import LOCAL

CGROUP_ROOT = Path("/sys/fs/cgroup")


def main_pid(container: str, env: dict | None = None) -> int | None:
    done = LOCAL.run(["docker", "inspect", "--format", "{{.State.Pid}}", container],
                     timeout=30, env=env)
    try:
        pid = int(done.stdout.strip()) if done.returncode == 0 else 0
    except ValueError:
        return None
    return pid or None


def cgroup_folder(pid: int, root: Path = CGROUP_ROOT, proc: Path = Path("/proc")) -> Path | None:
    """The folder of `pid`'s cgroup: v2's (the "0::" line) or v1's pids controller."""
    try:
        lines = (proc / str(pid) / "cgroup").read_text().splitlines()
    except OSError:
        return None
    by_controller = {}
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            by_controller[name] = path
    for name, folder in (("pids", root / "pids"), ("", root)):
        if name in by_controller and (folder / by_controller[name].lstrip("/")).is_dir():
            return folder / by_controller[name].lstrip("/")
    return None


def pids_in(folder: Path) -> list[int]:
    try:
        return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
    except OSError:
        return []


_found: dict[str, tuple[int, Path | None]] = {}   # container -> (its first pid, cgroup)


def container_pids(container: str, env: dict | None = None) -> list[int]:
    """Every process of a running container and its shim, as pids of this machine ([]
    when it is not running here). The engine is asked once per container: the resource
    sampler calls this on every tick, and a `docker inspect` each time was load of its
    own; the cgroup folder, while it has processes, is the container's."""
    pid, folder = _found.get(container, (None, None))
    if folder is None or not (pids := pids_in(folder)):
        pid = main_pid(container, env)
        if pid is None:
            _found.pop(container, None)
            return []
        folder = cgroup_folder(pid)
        _found[container] = (pid, folder)
        pids = pids_in(folder) if folder is not None else [pid]
    return [*pids, *_shim(pid)]


def _shim(pid: int) -> list[int]:
    """The containerd shim that runs the container (its first process's parent, outside
    its cgroup): it relays the container's stdio and waits on it, work of docker mode."""
    try:
        parent = psutil.Process(pid).parent()
        return [parent.pid] if parent and parent.name().startswith("containerd-shim") else []
    except psutil.Error:
        return []

