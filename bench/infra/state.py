"""What a running harness has started, kept on disk so that a harness killed with SIGKILL
(or by the OOM killer), which cleans up nothing, leaves nothing running unnoticed.

Every invocation that starts processes writes `<cache>/state/<pid>.json`: its own pid and
start time, its results folder, and every process group and data folder it started,
updated as they come and go (atomically: a reader never sees half a file). A clean exit
deletes the file. The next invocation `reap()`s the files of harnesses that are gone:
it kills the process groups they left, removes their data folders once nothing runs in
them, marks a results document stuck in "running" as interrupted, and says what it did.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

import psutil

from bench.paths import CACHE_DIR

STATE_DIR = CACHE_DIR / "state"


def _started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


class RunState:
    """This process's record. `ACTIVE` is the one the Host seam reports to."""

    def __init__(self, state_dir: Path = STATE_DIR):
        self.path = Path(state_dir) / f"{os.getpid()}.json"
        self._lock = threading.RLock()
        self.data = {"harness_pid": os.getpid(), "harness_started": _started(os.getpid()),
                     "run_dir": None, "groups": {}, "paths": [], "projects": {}}

    def _write(self) -> None:
        # one writer at a time: the resource sampler's thread starts processes too (docker
        # mode's `compose ps`), and two writers sharing the .tmp file lost a rename
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data))
            os.replace(tmp, self.path)

    def run_dir(self, path: Path) -> None:
        with self._lock:
            self.data["run_dir"] = str(path)
            self._write()

    def group_started(self, pid: int, argv: list[str]) -> None:
        with self._lock:
            self.data["groups"][str(pid)] = {"started": _started(pid), "argv": argv[:6]}
            self._write()

    def group_stopped(self, pid: int) -> None:
        with self._lock:
            if self.data["groups"].pop(str(pid), None) is not None:
                self._write()

    def path_created(self, path: Path) -> None:
        with self._lock:
            self.data["paths"].append(str(path))
            self._write()

    def path_removed(self, path: Path) -> None:
        with self._lock:
            if str(path) in self.data["paths"]:
                self.data["paths"].remove(str(path))
                self._write()

    def project_started(self, name: str, down: list[str], env: dict) -> None:
        """A compose project (docker mode's databases): the command that removes it, and
        the environment it needs (DOCKER_HOST, the images' names)."""
        with self._lock:
            self.data.setdefault("projects", {})[name] = {"down": down, "env": env}
            self._write()

    def project_removed(self, name: str) -> None:
        with self._lock:
            if self.data.setdefault("projects", {}).pop(name, None) is not None:
                self._write()

    def close(self) -> None:
        if self.data.get("projects"):
            # a compose project this harness could not remove (its engine stopped
            # answering): left on record for the next invocation's reaper, alone
            self.data.update(run_dir=None, groups={}, paths=[])
            self._write()
            return
        self.path.unlink(missing_ok=True)


ACTIVE: RunState | None = None


def activate(state_dir: Path = STATE_DIR) -> RunState:
    global ACTIVE
    ACTIVE = RunState(state_dir)
    ACTIVE._write()
    return ACTIVE


def deactivate() -> None:
    global ACTIVE
    if ACTIVE is not None:
        ACTIVE.close()
    ACTIVE = None


# the Host seam calls these; they do nothing when no state is active (tests, tools)
def group_started(pid: int, argv: list[str]) -> None:
    if ACTIVE is not None:
        ACTIVE.group_started(pid, argv)


def group_stopped(pid: int) -> None:
    if ACTIVE is not None:
        ACTIVE.group_stopped(pid)


def path_created(path: Path) -> None:
    if ACTIVE is not None:
        ACTIVE.path_created(path)


def path_removed(path: Path) -> None:
    if ACTIVE is not None:
        ACTIVE.path_removed(path)


def project_started(name: str, down: list[str], env: dict) -> None:
    if ACTIVE is not None:
        ACTIVE.project_started(name, down, env)


def project_removed(name: str) -> None:
    if ACTIVE is not None:
        ACTIVE.project_removed(name)


# --------------------------------------------------------------------------- the reaper

def _alive(pid: int, started: float | None) -> bool:
    """The process that wrote a state file still runs (not merely a reused pid)."""
    now = _started(pid)
    return now is not None and (started is None or abs(now - started) < 1.0)


def group_members(pgid: int, leader_started: float | None) -> list[psutil.Process]:
    """The processes still in the group a dead harness started. A live process whose pid
    is the group id but that started at another time is a reused pid that leads a group
    of its own: nothing of that group is ours."""
    now = _started(pgid)
    if now is not None and leader_started is not None and abs(now - leader_started) >= 1.0:
        return []
    members = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid:
                members.append(proc)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return members


def _kill_group(pgid: int, info: dict, grace: float = 3.0) -> int:
    members = group_members(pgid, info.get("started"))
    if not members:
        return 0
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        for proc in members:
            try:
                proc.send_signal(sig)
            except psutil.Error:
                pass
        _, members = psutil.wait_procs(members, timeout=wait)
        if not members:
            break
    return len(group_members(pgid, info.get("started")))


def _users_of(path: str) -> list[psutil.Process]:
    """Processes whose working directory or open files are inside `path`."""
    users = []
    for proc in psutil.process_iter(["pid"]):
        try:
            cwd = proc.cwd()
            if cwd == path or cwd.startswith(path + os.sep):
                users.append(proc)
        except psutil.Error:
            continue
    return users


def _mark_interrupted(run_dir: str | None, pid: int) -> str | None:
    """A results document left "running" by a dead harness: interrupted, with why."""
    if not run_dir:
        return None
    from bench.storage import document, results
    path = Path(run_dir)
    try:
        run = document.load_run(path)
    except (OSError, ValueError):
        return None
    if run.status != results.RUNNING:
        return None
    now = results.now_iso()
    run.interrupt(f"the harness (pid {pid}) was killed without a chance to clean up "
                  f"(SIGKILL or the OOM killer); found and cleaned up by a later "
                  f"invocation at {now}",
                  "the harness was killed before this sample was measured")
    if run.finished_at is None:
        run.finish(now)
    run.save(path)
    return str(path)


def _remove_project(info: dict) -> str | None:
    """`compose down` of a dead harness's project (its containers, network and volumes);
    None when done, else what went wrong."""
    try:
        done = subprocess.run(info["down"], env={**os.environ, **info.get("env", {})},
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip()[-300:] or
                                              f"exit {done.returncode}")


def reap(state_dir: Path = STATE_DIR) -> list[str]:
    """Clean up after every harness that died without doing so; one message per dead
    harness saying what was found and done. One reaper at a time on this machine: two
    harnesses starting together (the test suite's parallel workers) both found a dead
    one's file and both marked its run interrupted, and the second's rename of the
    results found the first's gone (FileNotFoundError, and that harness did not start)."""
    Path(state_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(state_dir) / "reap.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _reap(state_dir)


def _reap(state_dir: Path) -> list[str]:
    messages = []
    for file in sorted(Path(state_dir).glob("*.json")):
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError):
            file.unlink(missing_ok=True)
            continue
        pid = data.get("harness_pid")
        if pid == os.getpid() or _alive(pid, data.get("harness_started")):
            continue
        done = []
        left = {}
        for pgid, info in data.get("groups", {}).items():
            if group_members(int(pgid), info.get("started")):
                remaining = _kill_group(int(pgid), info)
                done.append(f"stopped process group {pgid} ({' '.join(info.get('argv', [])[:3])})")
                if remaining:
                    left[pgid] = info
        kept_projects = {}
        for name, info in data.get("projects", {}).items():
            removed = _remove_project(info)
            done.append(f"removed compose project {name}" if removed is None else
                        f"could not remove compose project {name} (tried again by the "
                        f"next invocation): {removed}")
            if removed is not None:
                kept_projects[name] = info
        for path in data.get("paths", []):
            if not Path(path).exists():
                continue
            users = _users_of(path)
            if users:
                done.append(f"kept {path}: processes {[p.pid for p in users]} still use it")
                continue
            shutil.rmtree(path, ignore_errors=True)
            done.append(f"removed {path}")
        marked = _mark_interrupted(data.get("run_dir"), pid)
        if marked:
            done.append(f"marked {marked} interrupted")
        if left or kept_projects:
            data.update(groups=left, projects=kept_projects, run_dir=None)
            file.write_text(json.dumps(data))
            if left:
                done.append(f"could not stop process groups {', '.join(left)}")
        else:
            file.unlink(missing_ok=True)
        if done:
            messages.append(f"cleaned up after a harness that died (pid {pid}): "
                            + "; ".join(done))
    return messages
