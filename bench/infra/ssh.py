"""One SSH connection to another machine and the harness's agent at its far end.

Why an agent: every call could open an SSH exec channel, but each one costs the remote
sshd a fork and a shell, and the resource sampler calls four times a second on the very
machine being measured. Instead, connecting starts one small stdlib-only Python program
(bench/infra/agent, sent by reading its own files; `python3` must exist on the host). It
answers length-prefixed JSON requests on its stdin/stdout by operation name.

What is guaranteed when things go wrong:
- the host is unreachable only when the SSH connection ends, or when the agent does not
  answer its liveness probe ("ping": the heartbeat every HEARTBEAT_S, and the probe made
  when any other request goes unanswered within its bound); from then on every call
  raises HostUnreachable, naming the host, the operation and the underlying error;
- a request unanswered while the probe is answered is that request's failure
  (RemoteError), and a file that cannot be copied (e.g. no SFTP subsystem) is a
  TransferError: neither marks the host unreachable;
- the agent kills every session it started (SIGTERM, then SIGKILL) when its stdin ends,
  when it hears nothing from the harness for WATCHDOG_S, or when close() asks it to;
- close() never raises: it stops what was started, disconnects and returns a sentence
  when something could not be done.

Keys, known_hosts, user and port come from the user's SSH configuration and agent
(asyncssh's defaults) unless given; nothing here reads, stores or prints a secret.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import json
import posixpath
import shlex
import threading
from pathlib import Path

import asyncssh

from bench.infra import agent
from bench.infra.seam import HostUnreachable, TransferError

CALL_TIMEOUT_S = 10.0     # the agent answers in milliseconds: 10 s without an answer is a lost host
CONNECT_TIMEOUT_S = 10.0
HEARTBEAT_S = 5.0         # the harness is alive (and the connection works) ...
WATCHDOG_S = 30.0         # ... or the agent stops what it started and exits after this long
COPY_TIMEOUT_S = 600.0    # put/get of a project tree over a slow link
CLOSE_TIMEOUT_S = 10.0


class RemoteError(RuntimeError):
    """The agent could not do what was asked, or did not answer it in time while it still
    answers its liveness probe (not a connection problem)."""


class _NoAnswer(Exception):
    """A request was not answered within its bound (whether the host is lost is decided
    by the liveness probe)."""


class _Watch(asyncssh.SSHClient):
    """Tells the session why its connection ended."""

    def __init__(self, session: "AgentSession"):
        self._session = session

    def connection_lost(self, exc: Exception | None) -> None:
        self._session._connection_lost(exc)


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        text += " (its host key must be in your known_hosts: connect once with ssh, or ssh-keyscan it)"
    elif isinstance(exc, asyncssh.PermissionDenied):
        text += " (no key was accepted: load one into ssh-agent or name it in ~/.ssh/config)"
    return text or type(exc).__name__


class AgentSession:
    """The connection and the agent of one RemoteHost. `port` None: the one the SSH
    configuration names (else 22); once connected, `port` is the one really used."""

    def __init__(self, address: str, *, name: str, user: str | None = None,
                 port: int | None = None, python: str = "python3",
                 connect_options: dict | None = None, call_timeout: float = CALL_TIMEOUT_S,
                 connect_timeout: float = CONNECT_TIMEOUT_S, watchdog_s: float = WATCHDOG_S):
        self.address, self.name, self.user, self.port, self.python = \
            address, name, user, port, python
        self.call_timeout, self.connect_timeout, self.watchdog_s = \
            call_timeout, connect_timeout, watchdog_s
        self.options = dict(connect_options or {})      # asyncssh.connect keywords
        self.spawned: dict[int, int] = {}     # every session started there: pid -> start
        self.hello: dict | None = None
        self.broken: str | None = None        # why the host is unreachable, once it is
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn = self._agent = None
        self._tasks: list[asyncio.Task] = []
        self._pending: dict[int, asyncio.Future] = {}
        self._ids = itertools.count(1)
        self._lost: str | None = None         # what the SSH layer said when it ended
        self._closing = self._closed = False
        self._stderr_tail = b""

    @property
    def where(self) -> str:
        return f"{self.address} port {self.port}" if self.port else self.address

    # ------------------------------------------------------------ connection
    def connect(self) -> dict:
        """Open the connection and start the agent (done by the first call otherwise);
        the agent's hello: its pid, home, environment and Python version."""
        with self._lock:
            if self._closed:
                raise HostUnreachable(self.name, "closed")
            if self.broken:
                raise HostUnreachable(self.name, self.broken)
            if self.hello is not None:
                return self.hello
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(target=self._loop.run_forever,
                                                name=f"ssh {self.name}", daemon=True)
                self._thread.start()
            bound = self.connect_timeout + self.call_timeout + 5
            try:
                self.hello = self._wait(self._aconnect(), bound, "connecting")
            except HostUnreachable as exc:
                self.broken = self.broken or exc.reason
                raise HostUnreachable(self.name, self.broken) from None
        return self.hello

    async def _aconnect(self) -> dict:
        options = {"connect_timeout": self.connect_timeout, **self.options}
        if self.port is not None:
            options["port"] = self.port       # else the SSH configuration's Port, or 22
        if self.user:
            options["username"] = self.user
        try:
            self._conn = await asyncssh.connect(self.address, client_factory=lambda: _Watch(self),
                                                **options)
        except (asyncio.TimeoutError, TimeoutError):
            raise HostUnreachable(self.name, f"cannot connect to {self.where}: no answer within "
                                             f"{self.connect_timeout:.0f} s") from None
        except (OSError, asyncssh.Error) as exc:
            raise HostUnreachable(self.name, f"cannot connect to {self.where}: "
                                             f"{describe(exc)}") from None
        with contextlib.suppress(Exception):          # the port the connection really uses
            self.port = int(self._conn.get_extra_info("peername")[1])
        try:
            self._agent = await self._conn.create_process(
                f"exec {shlex.quote(self.python)} -c {shlex.quote(agent.BOOT)}", encoding=None)
            self._agent.stdin.write(agent.payload())
        except (OSError, asyncssh.Error) as exc:
            raise HostUnreachable(self.name, f"cannot start the agent: {describe(exc)}") from None
        self._tasks = [asyncio.create_task(self._read_replies()),
                       asyncio.create_task(self._read_stderr())]
        try:
            hello = await self._arequest("hello", {"watchdog_s": self.watchdog_s},
                                         self.call_timeout)
        except _NoAnswer:
            raise HostUnreachable(self.name, f"its agent ({self.python}) did not answer "
                                             f"'hello' within {self.call_timeout:.0f} s") from None
        self._tasks.append(asyncio.create_task(self._heartbeat()))
        return hello

    def _connection_lost(self, exc: Exception | None) -> None:
        self._lost = (f"SSH connection lost ({describe(exc)})" if exc else
                      f"SSH connection closed by {self.address}")
        if not self._closing:
            self._mark_broken(self._lost)

    def _mark_broken(self, reason: str) -> None:
        """From now on every call raises HostUnreachable(reason); waiting calls at once."""
        if self.broken is None:
            self.broken = reason
        for fut in self._pending.values():
            if not fut.done():
                fut.set_exception(HostUnreachable(self.name, self.broken))
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
            reason = f"reading the agent's answers failed: {describe(exc)}"
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
        """Keeps the agent's watchdog quiet, and finds a silently dead link: the liveness
        probe, every HEARTBEAT_S."""
        with contextlib.suppress(HostUnreachable, RemoteError):
            while self.broken is None and not self._closing:
                await asyncio.sleep(HEARTBEAT_S)
                try:
                    await self._arequest("ping", {}, self.call_timeout)
                except _NoAnswer:
                    self._mark_broken(f"no answer to the liveness probe (heartbeat 'ping') "
                                      f"within {self.call_timeout:.0f} s")

    async def _arequest(self, op: str, args: dict, timeout: float):
        if self.broken:
            raise HostUnreachable(self.name, self.broken)
        rid = next(self._ids)
        fut = asyncio.get_running_loop().create_future()
        self._pending[rid] = fut
        data = json.dumps({"id": rid, "op": op, "args": args}).encode()
        try:
            self._agent.stdin.write(b"%d\n" % len(data) + data)
        except (OSError, asyncssh.Error) as exc:
            self._mark_broken(f"cannot send '{op}' to its agent: {describe(exc)}")
        try:
            msg = await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            self._pending.pop(rid, None)
            raise _NoAnswer() from None
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
        """Run a coroutine on this session's loop and wait at most `bound` seconds (a
        guard for the loop thread itself: the requests have bounds of their own)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("RemoteHost called from its own event loop")
        fut = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return fut.result(bound)
        except concurrent.futures.TimeoutError:
            fut.cancel()
            self.broken = self.broken or f"its connection's event loop did not finish {what} " \
                                         f"within {bound:.0f} s"
            raise HostUnreachable(self.name, self.broken) from None

    def call(self, op: str, *, within: float | None = None, **args):
        """One request to the agent; `within`: seconds to wait for its answer. Unanswered,
        the liveness probe decides: RemoteError when the agent still answers it,
        HostUnreachable (naming `op`) when it does not."""
        if self.broken:
            raise HostUnreachable(self.name, self.broken, f"'{op}'")
        if self.hello is None:
            self.connect()
        within = self.call_timeout if within is None else within
        try:
            return self._wait(self._arequest(op, args, within), within + 5, f"'{op}'")
        except HostUnreachable:
            raise HostUnreachable(self.name, self.broken or "?", f"'{op}'") from None
        except _NoAnswer:
            pass
        if self.alive():
            raise RemoteError(f"{self.name}: no answer to '{op}' within {within:.0f} s, though "
                              f"its agent answers the liveness probe")
        self._mark_broken(f"no answer to '{op}' within {within:.0f} s, nor to the liveness "
                          f"probe ('ping') within {self.call_timeout:.0f} s")
        raise HostUnreachable(self.name, self.broken)

    def alive(self) -> bool:
        """The liveness probe: the agent answers "ping" within the call timeout."""
        if self.broken or self.hello is None:
            return False
        try:
            self._wait(self._arequest("ping", {}, self.call_timeout), self.call_timeout + 5,
                       "'ping'")
            return True
        except (_NoAnswer, HostUnreachable):
            return False

    # ------------------------------------------------------------ files (SFTP)
    def copy(self, coro, what: str) -> None:
        """Run an SFTP copy; TransferError when it fails while the host still answers the
        liveness probe, HostUnreachable when it does not."""
        if self.broken:
            coro.close()
            raise HostUnreachable(self.name, self.broken)
        if self.hello is None:
            self.connect()
        try:
            self._wait(coro, COPY_TIMEOUT_S, what)
            return
        except asyncssh.SFTPError as exc:
            raise TransferError(f"{self.name}: {what} failed: {exc.reason}") from None
        except (asyncssh.Error, OSError) as exc:
            failure = describe(exc)
        if self.alive():
            raise TransferError(f"{self.name}: {what} failed: {failure} (the host still "
                                f"answers: does its sshd offer the SFTP subsystem?)")
        self._mark_broken(f"{what} failed ({failure}), and the liveness probe got no answer")
        raise HostUnreachable(self.name, self.broken)

    async def aput(self, local: Path, remote: str) -> None:
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

    async def aget(self, remote: str, local: Path) -> None:
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

    # ------------------------------------------------------------ the end
    def close(self) -> str | None:
        """Stop every session started there (SIGTERM, then SIGKILL), then disconnect.
        Never raises; returns what could not be done, or None."""
        with self._lock:
            if self._closed:
                return None
            self._closed = True
        problem = None
        if self.hello is not None and self.broken is None:
            try:
                self.call("shutdown", within=CLOSE_TIMEOUT_S)
            except HostUnreachable:
                pass         # the agent answers, then exits: the end of the channel is normal
            except Exception as exc:  # noqa: BLE001 - close never raises
                problem = f"{self.name}: stopping what ran there failed: {exc}"
        elif self.spawned:
            problem = self._stop_after_loss()
        self._closing = True
        if self._loop is not None:
            with contextlib.suppress(Exception):
                self._wait(self._adisconnect(), CLOSE_TIMEOUT_S, "disconnecting")
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            if not self._thread.is_alive():
                self._loop.close()
        self.broken = self.broken or "closed"
        return problem

    def _stop_after_loss(self) -> str | None:
        """The connection is gone but sessions were started: a fresh connection kills
        them (the old agent also does when its session ends or its watchdog fires)."""
        leaders = [[pid, start] for pid, start in self.spawned.items()]
        fresh = AgentSession(self.address, name=self.name, user=self.user, port=self.port,
                             python=self.python, connect_options=self.options,
                             call_timeout=self.call_timeout,
                             connect_timeout=min(self.connect_timeout, 5.0))
        try:
            fresh.call("kill_sessions", within=CLOSE_TIMEOUT_S, leaders=leaders)
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
