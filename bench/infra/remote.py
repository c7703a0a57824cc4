"""Another machine as a Host: the same methods as LocalHost, over one SSH connection.

Why an agent: every call could open an SSH exec channel, but each one costs the remote
sshd a fork and a shell, and the resource sampler calls four times a second on the very
machine being measured. Instead, connecting starts one small stdlib-only Python program
(AGENT_SOURCE below; `python3` must exist on the host) on the remote end of the
connection. It answers length-prefixed JSON requests on its stdin/stdout, reads /proc
itself (one round trip per sampling tick for all pids), and is the parent of every
process started there, so it reaps them with wait4 and returns their exact CPU time
(rusage), as LocalHost does.

What is guaranteed when things go wrong:
- a lost connection (or a request unanswered within `call_timeout`) marks the host
  unreachable: the call waiting and every later call raise HostUnreachable naming the
  host and why;
- the agent kills every session it started (SIGTERM, then SIGKILL) when its stdin ends
  (the SSH session died), when it hears nothing from the harness for WATCHDOG_S (the
  harness sends a heartbeat every HEARTBEAT_S), or when close() asks it to;
- close() never raises: it stops what was started, disconnects and returns a sentence
  when something could not be done.

Keys and known_hosts come from the user's SSH configuration and agent (asyncssh's
defaults); nothing here reads, stores or prints a secret.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import itertools
import json
import posixpath
import shlex
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

import asyncssh

from bench.infra.host import Completed, HostUnreachable, ProcessFigures, ProcessRef, pinned
from bench.paths import REPO

__all__ = ["RemoteHost", "RemoteProcess", "HostUnreachable", "RemoteError"]

CALL_TIMEOUT_S = 10.0     # the agent answers in milliseconds: 10 s without an answer is a lost host
CONNECT_TIMEOUT_S = 10.0
HEARTBEAT_S = 5.0         # the harness is alive (and the connection works) ...
WATCHDOG_S = 30.0         # ... or the agent stops what it started and exits after this long
COPY_TIMEOUT_S = 600.0    # put/get of a project tree over a slow link
CLOSE_TIMEOUT_S = 10.0

# bench.infra.environment.tools()'s version commands (it runs them on this machine only;
# once it takes a host, fingerprint() should call it instead of this copy)
TOOL_COMMANDS = {"wrk": ["wrk", "-v"], "rustc": ["rustc", "--version"], "go": ["go", "version"],
                 "node": ["node", "--version"], "oha": ["oha", "--version"], "nginx": ["nginx", "-v"]}

# The command run over SSH: the agent's source follows on stdin as its first line, so
# nothing but this fixed line (and the configured interpreter's name) is ever quoted.
BOOT = ("import sys,json;"
        "exec(compile(json.loads(sys.stdin.buffer.readline()),'webbench-agent','exec'))")


class RemoteError(RuntimeError):
    """The agent could not do what was asked (not a connection problem)."""


# --------------------------------------------------------------------------- the agent
AGENT_SOURCE = r'''
import json, os, platform, shutil, signal, socket, subprocess, sys, tempfile, threading, time

CLK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")
# /proc/<pid>/stat field n (1-based, as in proc(5)) is stat(pid)[n - 3]
STATE, PPID, PGRP, SESSION, UTIME, STIME, STARTTIME = 0, 1, 2, 3, 11, 12, 19
STATUS = {"R": "running", "S": "sleeping", "D": "disk-sleep", "Z": "zombie", "T": "stopped",
          "t": "tracing-stop", "X": "dead", "x": "dead", "I": "idle", "K": "wake-kill",
          "W": "waking", "P": "parked"}

_in, _out = sys.stdin.buffer, sys.stdout.buffer
_out_lock, _reap_lock = threading.Lock(), threading.Lock()
_children = {}            # pid -> {"popen", "start", "out", "err", "done"}
_heard = [time.monotonic()]
_watchdog_s = [30.0]


def send(msg):
    data = json.dumps(msg).encode()
    with _out_lock:
        _out.write(b"%d\n" % len(data) + data)
        _out.flush()


def stat(pid):
    with open("/proc/%d/stat" % pid, "rb") as f:
        data = f.read().decode("ascii", "replace")
    return data[data.rindex(")") + 2:].split()     # the name may hold spaces and parens


def started(pid):
    try:
        return int(stat(pid)[STARTTIME])
    except (OSError, ValueError, IndexError):
        return None


def all_stats():
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                out[int(name)] = stat(int(name))
            except (OSError, ValueError):
                pass
    return out


def expand(path):
    return os.path.expanduser(path) if path else path


def op_hello(watchdog_s):
    _watchdog_s[0] = watchdog_s
    threading.Thread(target=watchdog, daemon=True).start()
    return {"pid": os.getpid(), "home": os.path.expanduser("~"), "env": dict(os.environ),
            "python": platform.python_version()}


def op_ping():
    return None


def op_start(argv, cwd=None, env=None, log=None, capture=False):
    files, out = [], {"out": None, "err": None}
    if capture:
        for key in ("out", "err"):
            f = tempfile.NamedTemporaryFile(prefix="webbench-%s-" % key, delete=False)
            files.append(f)
            out[key] = f.name
        stdout, stderr = files
    elif log:
        log = expand(log)
        os.makedirs(os.path.dirname(log) or ".", exist_ok=True)
        stdout = open(log, "ab")
        files.append(stdout)
        stdout.write(("$ " + " ".join(argv) + "\n").encode())
        stdout.flush()
        stderr = subprocess.STDOUT
    else:
        stdout = stderr = subprocess.DEVNULL
    try:
        with _reap_lock:
            p = subprocess.Popen(argv, cwd=expand(cwd), env=env, stdin=subprocess.DEVNULL,
                                 stdout=stdout, stderr=stderr, start_new_session=True)
            _children[p.pid] = {"popen": p, "start": started(p.pid), "done": None, **out}
    except BaseException:
        for name in out.values():
            if name:
                os.unlink(name)
        raise
    finally:
        for f in files:
            f.close()
    return {"pid": p.pid, "start": _children[p.pid]["start"]}


def slurp(path):
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
                        c["done"]["stdout"], c["done"]["stderr"] = slurp(c["out"]), slurp(c["err"])
            if c["done"] is not None:
                done = dict(c["done"])
                c["done"].pop("stdout", None)
                c["done"].pop("stderr", None)
                return done
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


def op_poll(pid):
    return reap(pid)


def op_wait(pid, timeout):
    return reap(pid, timeout)


def op_signal(pid, sig):
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


def op_killpg(pid, sig):
    try:
        os.killpg(pid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def op_processes(pids):
    out = {}
    for pid in pids:
        start = started(pid)
        if start is not None:
            out[str(pid)] = start
    return out


def op_tree(pid):
    stats = all_stats()
    if pid not in stats:
        return []
    kids = {}
    for p, st in stats.items():
        kids.setdefault(int(st[PPID]), []).append(p)
    out, queue = [], [pid]
    while queue:
        p = queue.pop(0)
        out.append([p, int(stats[p][STARTTIME])])
        queue.extend(sorted(kids.get(p, [])))
    return out


def op_status(refs):
    out = []
    for pid, start in refs:
        try:
            st = stat(pid)
        except OSError:
            out.append(None)
            continue
        out.append(STATUS.get(st[STATE], st[STATE]) if int(st[STARTTIME]) == start else None)
    return out


def op_kill(pid, start):
    if started(pid) != start:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False


def op_threads(pid):
    names = []
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return names
    for tid in tids:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid), "rb") as f:
                names.append(f.read().decode("utf-8", "replace").rstrip("\n"))
        except OSError:
            pass
    return names


def read_text(pid, name):
    with open("/proc/%d/%s" % (pid, name), "rb") as f:
        return f.read().decode("utf-8", "replace")


def op_cmdline(pid, start):
    """As psutil reads it (also for a process that rewrote its title with spaces)."""
    if started(pid) != start:
        return ""
    try:
        data = read_text(pid, "cmdline")
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


def op_environ(pid, start):
    if started(pid) != start:
        return []
    try:
        data = read_text(pid, "environ")
    except OSError:
        return []
    return [line for line in data.split("\0") if line and line.find("=") > 0]


def established_on(pid, port):
    """Inodes of the established TCP sockets on local `port` in pid's network namespace."""
    wanted = set()
    for name in ("tcp", "tcp6"):
        try:
            lines = read_text(pid, "net/" + name).splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "01" and int(f[1].rsplit(":", 1)[1], 16) == port:
                wanted.add("socket:[%s]" % f[9])
    return wanted


def op_conns(refs, port):
    by_namespace, counts = {}, {}
    for pid, start in refs:
        if started(pid) != start:
            continue
        try:
            namespace = os.readlink("/proc/%d/ns/net" % pid)
            fds = os.listdir("/proc/%d/fd" % pid)
        except OSError:
            continue
        if namespace not in by_namespace:
            by_namespace[namespace] = established_on(pid, port)
        wanted, n = by_namespace[namespace], 0
        for fd in fds:
            try:
                n += os.readlink("/proc/%d/fd/%s" % (pid, fd)) in wanted
            except OSError:
                pass
        counts[str(pid)] = n
    return counts


def memory_of(pid):
    """[MiB, kind]: PSS from smaps_rollup, RSS when that is not readable; None if gone."""
    try:
        with open("/proc/%d/smaps_rollup" % pid, "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return [int(line.split()[1]) / 1024, "pss"]
    except OSError:
        pass
    try:
        with open("/proc/%d/statm" % pid) as f:
            return [int(f.read().split()[1]) * PAGE / 2**20, "rss"]
    except (OSError, ValueError, IndexError):
        return None


def op_read(refs, memory):
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
            out.append([cpu, None, ""])
            continue
        mem = memory_of(pid)
        out.append([cpu] + mem if mem else None)
    return out


def op_pin(pid, cpus):
    try:
        tids = [int(t) for t in os.listdir("/proc/%d/task" % pid)]
    except FileNotFoundError:
        return None
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
        except ProcessLookupError:
            pass
    return None


def op_affinity(pid):
    try:
        return sorted(os.sched_getaffinity(pid))
    except (ProcessLookupError, PermissionError):
        return None


def op_port_free(port, host):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def op_accepted():
    with open("/proc/net/snmp") as f:
        lines = f.read().splitlines()
    names, values = [line.split() for line in lines if line.startswith("Tcp:")][:2]
    return int(values[names.index("PassiveOpens")])


def op_which(tool):
    return shutil.which(tool)


def op_machine():
    """bench.infra.environment.machine()'s keys, read without psutil."""
    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return None
    model = mem_kb = mhz = None
    for line in (read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    for line in (read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            mem_kb = int(line.split()[1])
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    try:
        quota, period = read("/sys/fs/cgroup/cpu.max").split()[:2]
        if quota != "max":
            usable = min(usable, max(1, int(quota) // int(period)))
    except (AttributeError, ValueError):
        pass
    for name in ("scaling_max_freq", "cpuinfo_max_freq"):
        value = read("/sys/devices/system/cpu/cpu0/cpufreq/" + name)
        if value:
            mhz = round(int(value) / 1000)
            break
    return {"hostname": socket.gethostname(), "os": platform.platform(),
            "kernel": platform.release(), "cpu_model": model, "cpu_count": os.cpu_count(),
            "cpus_usable": max(1, usable),
            "cpu_governor": read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "cpu_mhz_max": mhz, "memory_gb": round(mem_kb / 2**20, 1) if mem_kb else None,
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version()}


def session_members(leaders):
    """Live processes of the sessions these [pid, start] leaders opened (a member cannot
    have started before its leader, which tells a reused pid apart)."""
    found = []
    for pid, st in all_stats().items():
        if st[STATE] in "ZXx" or pid == os.getpid():
            continue
        for leader, start in leaders:
            if int(st[SESSION]) == leader and start is not None and int(st[STARTTIME]) >= start:
                found.append(pid)
    return found


def reap_all():
    for pid in list(_children):
        try:
            reap(pid)
        except ChildProcessError:
            pass


def op_kill_sessions(leaders, grace=2.0):
    """SIGTERM to every process of these sessions, SIGKILL to what is left after grace;
    returns how many processes were still running at the start."""
    first = session_members(leaders)
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 2.0)):
        members = session_members(leaders)
        if not members:
            break
        for pid in members:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and session_members(leaders):
            reap_all()
            time.sleep(0.05)
    reap_all()
    return len(first)


def cleanup():
    return op_kill_sessions([[pid, c["start"]] for pid, c in list(_children.items())])


def watchdog():
    while True:
        time.sleep(1.0)
        if time.monotonic() - _heard[0] > _watchdog_s[0]:
            cleanup()
            os._exit(3)


OPS = {name[3:]: fn for name, fn in list(globals().items()) if name.startswith("op_")}


def handle(msg):
    try:
        reply = {"id": msg["id"], "ok": True, "result": OPS[msg["op"]](**msg.get("args", {}))}
    except Exception as exc:
        reply = {"id": msg["id"], "ok": False, "type": type(exc).__name__, "message": str(exc)}
        if isinstance(exc, OSError):
            reply.update(errno=exc.errno, strerror=exc.strerror, filename=exc.filename)
    try:
        send(reply)
    except OSError:
        pass                                   # the session is gone: stdin's end follows


def main():
    while True:
        header = _in.readline()
        if not header:
            break
        msg = json.loads(_in.read(int(header)))
        _heard[0] = time.monotonic()
        if msg["op"] == "shutdown":
            handle({"id": msg["id"], "op": "kill_sessions",
                    "args": {"leaders": [[p, c["start"]] for p, c in list(_children.items())]}})
            os._exit(0)
        if msg["op"] == "wait":                # blocks: answered from its own thread
            threading.Thread(target=handle, args=(msg,), daemon=True).start()
        else:
            handle(msg)
    cleanup()                                  # stdin ended: the SSH session is gone
    os._exit(0)


main()
'''


# --------------------------------------------------------------------------- processes
class RemoteProcess:
    """What RemoteHost.spawn returns: the part of subprocess.Popen the harness uses
    (pid, returncode, poll, wait, send_signal, terminate, kill), plus `cpu_s` (its own
    CPU seconds, from wait4) once it has exited."""

    def __init__(self, host: "RemoteHost", pid: int, start: int, argv: list[str]):
        self.host, self.pid, self.args = host, pid, argv
        self.ref = ProcessRef(pid, start, host)
        self.returncode: int | None = None
        self.cpu_s: float | None = None

    def _done(self, result: dict | None) -> None:
        if result is not None:
            self.returncode, self.cpu_s = result["returncode"], result["cpu_s"]

    def poll(self) -> int | None:
        if self.returncode is None:
            self._done(self.host._call("poll", pid=self.pid))
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its exit status; subprocess.TimeoutExpired after `timeout` (None: no limit,
        asked in bounded slices so that a lost host still raises)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = 60.0 if deadline is None else deadline - time.monotonic()
            if left <= 0:
                if self.poll() is None:
                    raise subprocess.TimeoutExpired(self.args, timeout)
                break
            left = min(left, 60.0)
            self._done(self.host._call("wait", within=left + self.host.call_timeout,
                                       pid=self.pid, timeout=left))
        return self.returncode

    def send_signal(self, sig: int) -> None:
        self.host._call("signal", pid=self.pid, sig=int(sig))

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __repr__(self) -> str:
        return f"<RemoteProcess {self.pid} on {self.host.name} returncode={self.returncode}>"


class _Watch(asyncssh.SSHClient):
    """Tells the host why its connection ended."""

    def __init__(self, host: "RemoteHost"):
        self._host = host

    def connection_lost(self, exc: Exception | None) -> None:
        self._host._connection_lost(exc)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        text += " (its host key must be in your known_hosts: connect once with ssh, or ssh-keyscan it)"
    elif isinstance(exc, asyncssh.PermissionDenied):
        text += " (no key was accepted: load one into ssh-agent or name it in ~/.ssh/config)"
    return text or type(exc).__name__


class RemoteHost:
    """A machine reached over SSH, with LocalHost's methods (see bench/infra/host.py for
    each one's meaning). Paths given to it are paths on that machine: absolute, `~/...`,
    or relative to `workdir` (where the project is copied to)."""
    remote = True            # its files are on another machine: put() and get()

    def __init__(self, address: str, *, name: str | None = None, user: str | None = None,
                 port: int = 22, workdir: str = "~/webbench", python: str = "python3",
                 connect_options: dict | None = None, call_timeout: float = CALL_TIMEOUT_S,
                 connect_timeout: float = CONNECT_TIMEOUT_S, watchdog_s: float = WATCHDOG_S):
        self.address, self.user, self.port = address, user, port
        self.name = name or f"{user + '@' if user else ''}{address}{'' if port == 22 else f':{port}'}"
        self.workdir, self.python = workdir, python
        self.call_timeout, self.connect_timeout, self.watchdog_s = \
            call_timeout, connect_timeout, watchdog_s
        self._options = dict(connect_options or {})      # asyncssh.connect keywords
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn = self._agent = None
        self._tasks: list[asyncio.Task] = []
        self._pending: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._hello: dict | None = None
        self._broken: str | None = None       # why the host is unreachable, once it is
        self._lost: str | None = None         # what the SSH layer said when it ended
        self._closing = self._closed = False
        self._stderr_tail = b""
        self._spawned: dict[int, int] = {}    # every session started here: pid -> start

    # ------------------------------------------------------------ connection
    def connect(self) -> "RemoteHost":
        """Open the connection and start the agent (done by the first call otherwise)."""
        with self._lock:
            if self._closed:
                raise HostUnreachable(self.name, "closed")
            if self._broken:
                raise HostUnreachable(self.name, self._broken)
            if self._hello is not None:
                return self
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever,
                                                name=f"ssh {self.name}", daemon=True)
                self._thread.start()
            bound = self.connect_timeout + self.call_timeout + 5
            try:
                self._hello = self._wait(self._aconnect(), bound, "connecting")
            except HostUnreachable as exc:
                self._broken = self._broken or exc.reason
                raise HostUnreachable(self.name, self._broken) from None
        return self

    async def _aconnect(self) -> dict:
        options = {"port": self.port, "connect_timeout": self.connect_timeout, **self._options}
        if self.user:
            options["username"] = self.user
        try:
            self._conn = await asyncssh.connect(self.address, client_factory=lambda: _Watch(self),
                                                **options)
        except (asyncio.TimeoutError, TimeoutError):
            raise HostUnreachable(self.name, f"cannot connect to {self.address} port {self.port}: "
                                             f"no answer within {self.connect_timeout:.0f} s") from None
        except (OSError, asyncssh.Error) as exc:
            raise HostUnreachable(self.name, f"cannot connect to {self.address} port "
                                             f"{self.port}: {_describe(exc)}") from None
        try:
            self._agent = await self._conn.create_process(
                f"exec {shlex.quote(self.python)} -c {shlex.quote(BOOT)}", encoding=None)
            self._agent.stdin.write(json.dumps(AGENT_SOURCE).encode() + b"\n")
        except (OSError, asyncssh.Error) as exc:
            raise HostUnreachable(self.name, f"cannot start the agent: {_describe(exc)}") from None
        self._tasks = [asyncio.create_task(self._read_replies()),
                       asyncio.create_task(self._read_stderr())]
        hello = await self._arequest("hello", {"watchdog_s": self.watchdog_s}, self.call_timeout)
        self._tasks.append(asyncio.create_task(self._heartbeat()))
        return hello

    def _connection_lost(self, exc: Exception | None) -> None:
        self._lost = (f"SSH connection lost ({_describe(exc)})" if exc else
                      f"SSH connection closed by {self.address}")
        if not self._closing:
            self._mark_broken(self._lost)

    def _mark_broken(self, reason: str) -> None:
        """From now on every call raises HostUnreachable(reason); waiting calls at once."""
        if self._broken is None:
            self._broken = reason
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(HostUnreachable(self.name, self._broken))
        self._pending.clear()

    async def _read_replies(self) -> None:
        reason = None
        try:
            while True:
                header = await self._agent.stdout.readline()
                if not header:
                    break
                msg = json.loads(await self._agent.stdout.readexactly(int(header)))
                fut = self._pending.pop(msg.get("id"), None)
                if fut is not None and not fut.done():
                    fut.set_result(msg)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure here ends the host
            reason = f"reading the agent's answers failed: {_describe(exc)}"
        if self._closing:
            return
        await asyncio.sleep(0.2)               # let connection_lost say why, if that is why
        if reason is None and self._lost is None:
            status = self._agent.exit_status
            tail = self._stderr_tail.decode("utf-8", "replace").strip().splitlines()[-3:]
            reason = (f"its agent ({self.python}) exited"
                      f"{f' with status {status}' if status is not None else ''}"
                      f"{': ' + ' / '.join(tail) if tail else ''}")
        self._mark_broken(self._lost or reason)

    async def _read_stderr(self) -> None:
        with contextlib.suppress(Exception):
            while True:
                chunk = await self._agent.stderr.read(4096)
                if not chunk:
                    return
                self._stderr_tail = (self._stderr_tail + chunk)[-4096:]

    async def _heartbeat(self) -> None:
        """Keeps the agent's watchdog quiet, and finds a silently dead link."""
        with contextlib.suppress(HostUnreachable, RemoteError):
            while self._broken is None and not self._closing:
                await asyncio.sleep(HEARTBEAT_S)
                await self._arequest("ping", {}, self.call_timeout)

    async def _arequest(self, op: str, args: dict, timeout: float):
        if self._broken:
            raise HostUnreachable(self.name, self._broken)
        rid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        data = json.dumps({"id": rid, "op": op, "args": args}).encode()
        try:
            self._agent.stdin.write(b"%d\n" % len(data) + data)
        except (OSError, asyncssh.Error) as exc:
            self._mark_broken(f"cannot send to its agent: {_describe(exc)}")
        try:
            msg = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            self._pending.pop(rid, None)
            self._mark_broken(f"no answer to '{op}' within {timeout:.0f} s")
            raise HostUnreachable(self.name, self._broken) from None
        if not msg["ok"]:
            raise self._error(op, msg)
        return msg["result"]

    def _error(self, op: str, msg: dict) -> Exception:
        """The agent's exception as the caller would have got it here: an OSError keeps its
        errno and filename (server.py reports `exc.filename` of a FileNotFoundError)."""
        if msg.get("errno") is not None:
            return OSError(msg["errno"], msg.get("strerror") or msg["message"], msg.get("filename"))
        if msg["type"] in ("OSError", "FileNotFoundError", "PermissionError"):
            return OSError(msg["message"])
        return RemoteError(f"{self.name}: '{op}' failed: {msg['type']}: {msg['message']}")

    def _wait(self, coro, bound: float, what: str):
        """Run a coroutine on this host's loop and wait at most `bound` seconds."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("RemoteHost called from its own event loop")
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return fut.result(bound)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            self._broken = self._broken or f"no answer while {what} within {bound:.0f} s"
            raise HostUnreachable(self.name, self._broken) from None

    def _call(self, op: str, *, within: float | None = None, **args):
        """One request to the agent; `within`: seconds to wait for its answer."""
        if self._broken:
            raise HostUnreachable(self.name, self._broken)
        if self._hello is None:
            self.connect()
        within = self.call_timeout if within is None else within
        # the request's own bound comes first; the outer one only guards the loop thread
        return self._wait(self._arequest(op, args, within), within + 5, f"'{op}'")

    @property
    def agent_pid(self) -> int | None:
        """The agent's pid on that host (None before connecting)."""
        return self._hello["pid"] if self._hello else None

    @property
    def unreachable(self) -> str | None:
        """Why this host is unreachable, or None."""
        return self._broken

    def close(self) -> str | None:
        """Stop everything started on this host (its sessions: SIGTERM, then SIGKILL),
        then disconnect. Never raises; returns what could not be done, or None."""
        with self._lock:
            if self._closed:
                return None
            self._closed = True
        problem = None
        if self._hello is not None and self._broken is None:
            try:
                self._call("shutdown", within=CLOSE_TIMEOUT_S)
            except HostUnreachable:
                pass         # the agent answers, then exits: the end of the channel is normal
            except Exception as exc:  # noqa: BLE001 - close never raises
                problem = f"{self.name}: stopping what ran there failed: {exc}"
        elif self._spawned:
            problem = self._stop_after_loss()
        self._closing = True
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._wait(self._adisconnect(), CLOSE_TIMEOUT_S, "disconnecting")
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self._loop.close()
        self._broken = self._broken or "closed"
        return problem

    def _stop_after_loss(self) -> str | None:
        """The connection is gone but sessions were started: a fresh connection kills
        them (the old agent also does when its session ends or its watchdog fires)."""
        leaders = [[pid, start] for pid, start in self._spawned.items()]
        fresh = RemoteHost(self.address, name=self.name, user=self.user, port=self.port,
                           workdir=self.workdir, python=self.python,
                           connect_options=self._options, call_timeout=self.call_timeout,
                           connect_timeout=min(self.connect_timeout, 5.0))
        try:
            fresh._call("kill_sessions", within=CLOSE_TIMEOUT_S, leaders=leaders)
            return None
        except Exception as exc:  # noqa: BLE001 - close never raises
            return (f"{self.name}: could not reach it to stop the {len(leaders)} process "
                    f"group(s) started there ({exc}); its agent stops them itself when its "
                    f"SSH session ends or after {self.watchdog_s:.0f} s without the harness")
        finally:
            fresh.close()

    async def _adisconnect(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._conn is not None:
            self._conn.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._conn.wait_closed(), 5)

    def __enter__(self) -> "RemoteHost":
        return self.connect()

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<RemoteHost {self.name}>"

    # ------------------------------------------------------------ paths
    def path(self, path: Path | str) -> str:
        """A path on this host: `~` is its user's home, a relative path is under workdir."""
        if self._hello is None:
            self.connect()
        home = self._hello["home"]
        text = str(path)
        if text == "~" or text.startswith("~/"):
            return home + text[1:]
        if text.startswith("/"):
            return text
        workdir = self.workdir
        if workdir == "~" or workdir.startswith("~/"):
            workdir = home + workdir[1:]
        elif not workdir.startswith("/"):
            workdir = posixpath.join(home, workdir)
        return posixpath.normpath(posixpath.join(workdir, text))

    def cache_dir(self) -> str:
        """The harness's build cache on this host (as bench.paths.CACHE_DIR locally)."""
        return self.path("~/.cache/webbench")

    def project_path(self, local_path: Path | str) -> str:
        """Where a file of this repository is on this host (the project is copied to
        workdir); ValueError for a path outside the repository."""
        # not resolved: the virtualenv's python is a symlink out of the project
        rel = Path(os.path.abspath(local_path)).relative_to(REPO)
        return self.path(rel.as_posix() if str(rel) != "." else ".")

    # ------------------------------------------------------------ processes
    def spawn(self, argv: list[str], *, cwd: Path | str | None = None, env: dict | None = None,
              log_path: Path | str | None = None, cpus: list[int] | None = None) -> RemoteProcess:
        """Start argv in a new session (its own process group) on this host; output to
        log_path there (its parent folders are created), else discarded. `env` None: the
        environment of the agent (see base_environment)."""
        argv = pinned([str(a) for a in argv], cpus)
        started = self._call("start", argv=argv, cwd=self.path(cwd) if cwd else None, env=env,
                             log=self.path(log_path) if log_path else None)
        self._spawned[started["pid"]] = started["start"]
        return RemoteProcess(self, started["pid"], started["start"], argv)

    def run(self, argv: list[str], *, timeout: float, cwd: Path | str | None = None,
            env: dict | None = None, on_start: Callable[[int], None] | None = None,
            stop_signal: int = signal.SIGINT, cpus: list[int] | None = None) -> Completed:
        """Run argv to completion on this host: its output, status and own CPU time (the
        agent is its parent and reaps it with wait4: rusage, exact, its reaped children
        included, as on LocalHost). Past `timeout` it gets `stop_signal`, then SIGKILL.
        On any other exception it is stopped and reaped before the exception goes on."""
        argv = pinned([str(a) for a in argv], cpus)
        start = time.monotonic()
        started = self._call("start", argv=argv, cwd=self.path(cwd) if cwd else None, env=env,
                             capture=True)
        pid = started["pid"]
        self._spawned[pid] = started["start"]
        done, timed_out = None, False
        try:
            if on_start:
                on_start(pid)
            left = max(0.0, timeout - (time.monotonic() - start))
            done = self._call("wait", within=left + self.call_timeout, pid=pid, timeout=left)
            if done is None:
                timed_out = True
                done = self._stop_and_reap(pid, stop_signal)
        except HostUnreachable:
            raise
        except BaseException:
            if done is None:
                with contextlib.suppress(Exception):
                    self._stop_and_reap(pid, stop_signal)
            raise
        self._spawned.pop(pid, None)
        return Completed(argv, done["returncode"], done.get("stdout", ""),
                         done.get("stderr", ""), done["cpu_s"], time.monotonic() - start,
                         timed_out)

    def _stop_and_reap(self, pid: int, first: int) -> dict:
        for sig, wait_s in ((first, 2.0), (signal.SIGKILL, 5.0)):
            self._call("signal", pid=pid, sig=int(sig))
            done = self._call("wait", within=wait_s + self.call_timeout, pid=pid, timeout=wait_s)
            if done is not None:
                return done
        return {"returncode": -9, "cpu_s": 0.0}

    def signal_group(self, pid: int, sig: int) -> bool:
        return self._call("killpg", pid=pid, sig=int(sig))

    def pin(self, pid: int, cpus: list[int]) -> None:
        self._call("pin", pid=pid, cpus=list(cpus))

    def affinity(self, pid: int) -> list[int] | None:
        return self._call("affinity", pid=pid)

    # ------------------------------------------------------------ resources
    def _refs(self, pairs: Iterable) -> list[ProcessRef]:
        return [ProcessRef(pid, start, self) for pid, start in pairs]

    def process(self, pid: int) -> ProcessRef | None:
        return self.processes([pid]).get(pid)

    def processes(self, pids: Iterable[int]) -> dict[int, ProcessRef]:
        pids = list(pids)
        if not pids:
            return {}
        found = self._call("processes", pids=pids)
        return {int(pid): ProcessRef(int(pid), start, self) for pid, start in found.items()}

    def tree(self, pid: int) -> list[ProcessRef]:
        return self._refs(self._call("tree", pid=pid))

    def running(self, refs: Iterable[ProcessRef], *, zombies: bool = True) -> list[ProcessRef]:
        refs = list(refs)
        if not refs:
            return []
        states = self._call("status", refs=[[r.pid, r.create_time] for r in refs])
        return [r for r, state in zip(refs, states)
                if state is not None and (zombies or state not in ("zombie", "dead"))]

    def kill(self, ref: ProcessRef) -> bool:
        return self._call("kill", pid=ref.pid, start=ref.create_time)

    def thread_names(self, pid: int) -> list[str]:
        return self._call("threads", pid=pid)

    def command_line(self, ref: ProcessRef) -> str:
        return self._call("cmdline", pid=ref.pid, start=ref.create_time)

    def environment(self, ref: ProcessRef) -> list[str]:
        return self._call("environ", pid=ref.pid, start=ref.create_time)

    def base_environment(self) -> dict[str, str]:
        """The agent's environment: what a process started here inherits by default (the
        SSH session's, not the harness's)."""
        if self._hello is None:
            self.connect()
        return dict(self._hello["env"])

    def connections_on_port(self, refs: list[ProcessRef], port: int) -> dict[int, int]:
        refs = list(refs)
        if not refs:
            return {}
        counts = self._call("conns", refs=[[r.pid, r.create_time] for r in refs], port=port)
        return {int(pid): n for pid, n in counts.items()}

    def read(self, ref: ProcessRef, memory: bool) -> ProcessFigures | None:
        return self.read_many([ref], memory)[ref]

    def read_many(self, refs: Iterable[ProcessRef],
                  memory: bool) -> dict[ProcessRef, ProcessFigures | None]:
        """CPU seconds ((utime + stime) / CLK_TCK of /proc/<pid>/stat, what psutil reads)
        and PSS (smaps_rollup; RSS from statm where that is unreadable) of every ref, in
        one round trip."""
        refs = list(refs)
        if not refs:
            return {}
        rows = self._call("read", refs=[[r.pid, r.create_time] for r in refs], memory=memory)
        return {r: ProcessFigures(*row) if row is not None else None for r, row in zip(refs, rows)}

    # ------------------------------------------------------------ network and tools
    def port_is_free(self, port: int, host: str = "127.0.0.1") -> bool:
        return self._call("port_free", port=port, host=host)

    def tcp_connections_accepted(self) -> int:
        return self._call("accepted")

    def which(self, tool: str) -> str | None:
        return self._call("which", tool=tool)

    # ------------------------------------------------------------ files and identity
    def put(self, local_path: Path | str, host_path: Path | str) -> None:
        """Copy a local file or folder to this host over SFTP (a folder's contents are
        merged into host_path, as LocalHost's copytree does; parents are created)."""
        local, remote = Path(local_path), self.path(host_path)
        if not local.exists():
            raise FileNotFoundError(2, "No such file or directory", str(local))
        self._copy(self._aput(local, remote), f"copying {local} to {remote}")

    def get(self, host_path: Path | str, local_path: Path | str) -> None:
        """Copy a file or folder of this host to the harness's machine over SFTP."""
        remote, local = self.path(host_path), Path(local_path)
        self._copy(self._aget(remote, local), f"copying {remote} to {local}")

    def _copy(self, coro, what: str) -> None:
        if self._broken:
            coro.close()
            raise HostUnreachable(self.name, self._broken)
        try:
            self._wait(coro, COPY_TIMEOUT_S, what)
        except asyncssh.SFTPError as exc:
            raise OSError(f"{self.name}: {what} failed: {exc.reason}") from None
        except (asyncssh.Error, ConnectionError) as exc:
            self._broken = self._broken or f"{what} failed: {_describe(exc)}"
            raise HostUnreachable(self.name, self._broken) from None

    async def _aput(self, local: Path, remote: str) -> None:
        async with self._conn.start_sftp_client() as sftp:
            if local.is_dir():
                await sftp.makedirs(remote, exist_ok=True)
                children = [str(c) for c in local.iterdir()]
                if children:
                    await sftp.put(children, remote, recurse=True, preserve=True)
            else:
                if posixpath.dirname(remote):
                    await sftp.makedirs(posixpath.dirname(remote), exist_ok=True)
                await sftp.put(str(local), remote, preserve=True)

    async def _aget(self, remote: str, local: Path) -> None:
        async with self._conn.start_sftp_client() as sftp:
            if await sftp.isdir(remote):
                local.mkdir(parents=True, exist_ok=True)
                children = [posixpath.join(remote, n) for n in await sftp.listdir(remote)
                            if n not in (".", "..")]
                if children:
                    await sftp.get(children, str(local), recurse=True, preserve=True)
            else:
                local.parent.mkdir(parents=True, exist_ok=True)
                await sftp.get(remote, str(local), preserve=True)

    def fingerprint(self) -> dict:
        """This host's environment block, with the keys of LocalHost.fingerprint()
        (bench.infra.environment's machine() and tools()); "python" is the python3 the
        agent runs on."""
        machine = self._call("machine")
        tools = {"python": machine.pop("python")}
        tools.update({name: self._first_line(argv) for name, argv in TOOL_COMMANDS.items()})
        return {**machine, "tools": tools}

    def _first_line(self, argv: list[str]) -> str | None:
        if not self.which(argv[0]):
            return None
        try:
            done = self.run(argv, timeout=10)
        except OSError:
            return None
        text = (done.stdout or done.stderr).strip()
        return text.splitlines()[0] if text else None
