"""The agent's main loop on another host: length-prefixed JSON requests on stdin, one
answer each on stdout, every operation by name (OPS).

A request is `<length>\\n{"id": n, "op": name, "args": {...}}`; the answer carries the
same id and either {"ok": true, "result": ...} or {"ok": false, "type", "message"} (and
an OSError's errno, strerror and filename, so the harness raises it as the caller would
have got it). Slow operations are answered from threads of their own (SLOW).

The agent stops every session it started (SIGTERM, then SIGKILL) and exits when its
stdin ends (the SSH session died), when the harness asks ("shutdown"), or when nothing
was heard from the harness for the watchdog's time (the harness pings every few seconds).
"""
from __future__ import annotations

import json
import os
import platform
import sys
import threading
import time

from . import children, network, procfs, programs, sockets, steps

_out_lock = threading.Lock()
_heard = [time.monotonic()]
_watchdog_s = [30.0]


def hello(watchdog_s):
    """The first request: starts the watchdog; says who and where the agent is."""
    _watchdog_s[0] = watchdog_s
    threading.Thread(target=_watchdog, daemon=True).start()
    return {"pid": os.getpid(), "home": os.path.expanduser("~"), "env": dict(os.environ),
            "python": platform.python_version()}


def ping():
    """The liveness probe: answered at once by a live agent."""
    return None


def processes(pids):
    """{pid: start} of the pids that run now."""
    out = {}
    for pid in pids:
        start = procfs.started(pid)
        if start is not None:
            out[str(pid)] = start
    return out


OPS = {
    **steps.STEPS,
    "hello": hello, "ping": ping,
    "start": children.start, "poll": children.poll, "wait": children.wait,
    "signal": children.send, "killpg": children.killpg, "kill": children.kill,
    "kill_sessions": children.kill_sessions,
    "processes": processes, "tree": procfs.tree, "status": procfs.status,
    "threads": procfs.thread_names, "cmdline": procfs.cmdline, "environ": procfs.environ,
    "conns": procfs.connections, "sockmem": sockets.socket_memory, "read": procfs.read, "accepted": procfs.passive_opens,
    "pin": procfs.pin, "affinity": procfs.affinity,
    "port_free": network.port_free, "which": programs.which,
}


# Operations that may take seconds (a wait for a child, a folder's removal, a round-trip
# probe): the loop goes on answering the others, the liveness probe above all.
SLOW = {"wait", *steps.STEPS}


def _send(msg):
    data = json.dumps(msg).encode()
    with _out_lock:
        sys.stdout.buffer.write(b"%d\n" % len(data) + data)
        sys.stdout.buffer.flush()


def handle(msg):
    """Answer one request (never raises: a failure is the answer)."""
    try:
        reply = {"id": msg["id"], "ok": True, "result": OPS[msg["op"]](**msg.get("args", {}))}
    except Exception as exc:
        reply = {"id": msg["id"], "ok": False, "type": type(exc).__name__, "message": str(exc)}
        if isinstance(exc, OSError):
            reply.update(errno=exc.errno, strerror=exc.strerror, filename=exc.filename)
    try:
        _send(reply)
    except OSError:
        pass                                   # the session is gone: stdin's end follows


def _watchdog():
    while True:
        time.sleep(1.0)
        if time.monotonic() - _heard[0] > _watchdog_s[0]:
            children.kill_all()
            os._exit(3)


def main():
    stdin = sys.stdin.buffer
    while True:
        header = stdin.readline()
        if not header:
            break
        msg = json.loads(stdin.read(int(header)))
        _heard[0] = time.monotonic()
        if msg["op"] == "shutdown":
            handle({"id": msg["id"], "op": "kill_sessions",
                    "args": {"leaders": children.leaders()}})
            os._exit(0)
        if msg["op"] in SLOW:                  # answered from a thread of its own
            threading.Thread(target=handle, args=(msg,), daemon=True).start()
        else:
            handle(msg)
    children.kill_all()                        # stdin ended: the SSH session is gone
    os._exit(0)
