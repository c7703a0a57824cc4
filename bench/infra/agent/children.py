"""The processes the agent starts on its host, as their parent: it reaps them with wait4
(their exact CPU time, as LocalHost has it) and, when the harness goes away, stops every
session it started. Used on another host only (LocalHost is the parent of its own)."""
from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time

from . import files, procfs

_reap_lock = threading.Lock()
_children: dict = {}            # pid -> {"popen", "start", "out", "err", "done"}


def start(argv, cwd=None, env=None, log=None, capture=False):
    """argv in a new session (its own process group); output to `log` (its folders are
    created), captured for reap() when `capture`, else discarded."""
    opened, out = [], {"out": None, "err": None}
    if capture:
        for key in ("out", "err"):
            f = tempfile.NamedTemporaryFile(prefix="webbench-%s-" % key, delete=False)
            opened.append(f)
            out[key] = f.name
        stdout, stderr = opened
    elif log:
        log = files.expand(log)
        os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
        stdout = open(log, "ab")
        opened.append(stdout)
        stdout.write(("$ " + " ".join(argv) + "\n").encode())
        stdout.flush()
        stderr = subprocess.STDOUT
    else:
        stdout = stderr = subprocess.DEVNULL
    try:
        with _reap_lock:
            p = subprocess.Popen(argv, cwd=files.expand(cwd), env=env, stdin=subprocess.DEVNULL,
                                 stdout=stdout, stderr=stderr, start_new_session=True)
            _children[p.pid] = {"popen": p, "start": procfs.started(p.pid), "done": None, **out}
    except BaseException:
        for name in out.values():
            if name:
                os.unlink(name)
        raise
    finally:
        for f in opened:
            f.close()
    return {"pid": p.pid, "start": _children[p.pid]["start"]}


def _slurp(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    finally:
        os.unlink(path)


def reap(pid, block_s=0.0):
    """A child's status and CPU time (and captured output, handed over once), or None
    while it runs (waiting up to block_s)."""
    deadline = time.monotonic() + block_s
    while True:
        with _reap_lock:
            c = _children.get(pid)
            if c is None:
                raise ProcessLookupError(3, "process %d was not started by this agent" % pid)
            if c["done"] is None:
                got, status, ru = os.wait4(pid, os.WNOHANG)
                if got:
                    code = os.waitstatus_to_exitcode(status)
                    c["popen"].returncode = code
                    c["done"] = {"returncode": code, "cpu_s": ru.ru_utime + ru.ru_stime}
                    if c["out"]:
                        c["done"]["stdout"], c["done"]["stderr"] = _slurp(c["out"]), _slurp(c["err"])
            if c["done"] is not None:
                done = dict(c["done"])
                c["done"].pop("stdout", None)
                c["done"].pop("stderr", None)
                return done
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def poll(pid):
    return reap(pid)


def wait(pid, timeout):
    return reap(pid, timeout)


def send(pid, sig):
    """A signal to one unreaped child (an unreaped pid cannot have been reused)."""
    with _reap_lock:
        c = _children.get(pid)
        if c is None or c["done"] is not None:
            return False
        try:
            os.kill(pid, sig)
            return True
        except ProcessLookupError:
            return False


def killpg(pid, sig):
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def kill(pid, start):
    """SIGKILL to [pid, start] unless that process is gone."""
    if procfs.started(pid) != start:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False


def _reap_all():
    for pid in list(_children):
        try:
            reap(pid)
        except ChildProcessError:
            pass


def kill_sessions(leaders, grace=2.0):
    """SIGTERM to every process of these sessions, SIGKILL to what is left after grace;
    returns how many processes were still running at the start."""
    me = os.getpid()
    first = procfs.session_members(leaders, me)
    for sig, wait_s in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        members = procfs.session_members(leaders, me)
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and procfs.session_members(leaders, me):
            _reap_all()
            time.sleep(0.05)
    _reap_all()
    return len(first)


def leaders():
    """[pid, start] of every session this agent started."""
    return [[pid, c["start"]] for pid, c in list(_children.items())]


def kill_all():
    """kill_sessions() of every session this agent started."""
    return kill_sessions(leaders())
