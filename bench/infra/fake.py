"""A Host with no processes at all, for unit tests of the orchestration (as a mock
executor is for a benchmarking tool): what the harness starts, signals, reads and asks
over HTTP is answered from a table, and written down for the test to read.

    fake = FakeHost()
    with ServerProcess(variant, settings, None, log_path, host=fake) as server:
        server.wait_ready()            # GET /ping/ answered by the fake server

A spawn whose environment names a server (BENCH_SERVER_ID, BENCH_HOST, BENCH_PORT,
BENCH_WORKERS: what ServerProcess gives it) starts a fake server: it listens on that
address, answers GET /ping/ as that server, and has BENCH_WORKERS fake workers that its
manifest's [workers] check counts (command lines, environments or thread names made to
match it). One naming a proxy (BENCH_PROXY_NAME, BENCH_PROXY_PORT, BENCH_UPSTREAM_PORT)
answers what its upstream answers. `serve()` adds any other listener. Everything else
that is spawned is a process that runs until it is signalled (`exit()` ends it early).

What happened is in `events` (in order), `spawned`, `ran`, `http_requests`, `calls`.
"""
from __future__ import annotations

import itertools
import json
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlsplit

from bench.infra.agent.steps import STEPS
from bench.infra.seam import (Completed, HttpAnswer, HttpUnanswered, ProcessFigures, ProcessRef,
                              TransferError, fingerprint_of, pinned)
from bench.paths import CACHE_DIR

FIRST_PID = 10_000_000         # above any kernel's pid_max: never a real process
ENDING = {signal.SIGTERM, signal.SIGINT, signal.SIGKILL, signal.SIGQUIT, signal.SIGHUP}
CPU_SHARE = 0.5                # cores each fake process is said to use while it runs
MEMORY_MB = 20.0               # and its memory
SOCKET_BYTES = 65536           # and the kernel's memory for each connection it holds
FILE_STEPS = ("euid", "make_temp_folder", "make_folder", "write_file", "append", "tail_file",
              "remove", "sizes")        # a FakeHost's files are this machine's: done for real


def example(pattern: str) -> str:
    """A text that `pattern` (a [workers] match: a literal, maybe anchored) matches."""
    text = re.sub(r"\\(.)", r"\1", pattern.removeprefix("^").removesuffix("$"))
    if re.search(pattern, text) is None:
        raise ValueError(f"FakeHost cannot make up a text that /{pattern}/ matches: give "
                         f"FakeHost(worker_text=...) one")
    return text


class FakeProcess:
    """A process that does not exist: what FakeHost.spawn returns (the part of
    subprocess.Popen the harness uses), and each of its fake children."""

    def __init__(self, host: "FakeHost", pid: int, ppid: int, argv: list[str], *,
                 env: dict | None = None, cwd=None, log_path=None, cpus=None,
                 command_line: str | None = None, threads: list[str] | None = None):
        self.host, self.pid, self.ppid, self.pgid = host, pid, ppid, pid
        self.args, self.env, self.cwd, self.log_path, self.cpus = \
            list(argv), dict(env or {}), cwd, log_path, cpus
        self.command_line = command_line if command_line is not None else " ".join(argv)
        self.threads = threads or [Path(argv[0]).name[:15]]     # the kernel keeps 15
        self.created = float(pid)            # a create_time unique to this process
        self.started = time.monotonic()
        self.returncode: int | None = None
        self.signals: list[int] = []         # every signal it got, in order
        self.ignores: set[int] = set()       # signals it survives (never SIGKILL)
        self.children: list[FakeProcess] = []

    @property
    def ref(self) -> ProcessRef:
        return ProcessRef(self.pid, self.created, self.host)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        """Its status; a fake process never ends by itself, so one still running raises
        subprocess.TimeoutExpired at once (a real wait would have run out of time)."""
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.args, timeout if timeout is not None else 0)
        return self.returncode

    def send_signal(self, sig: int) -> None:
        self.host._signal([self], sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __repr__(self) -> str:
        return f"<FakeProcess {self.pid} {self.command_line[:40]!r} returncode={self.returncode}>"


@dataclass
class Listener:
    """Something answering HTTP on a port of the fake host."""
    address: str
    port: int
    answer: Callable[[str], HttpAnswer]       # path -> answer
    owner: FakeProcess | None = None           # its port is free once the owner's group is gone
    requests: list[str] = field(default_factory=list)


def _json(status: int, body) -> HttpAnswer:
    return HttpAnswer(status, {"content-type": "application/json"}, json.dumps(body).encode())


class FakeHost:
    """A Host (bench/infra/seam.py) without processes; see the module's docstring.
    `remote`: behave as another machine (the server logs there and its log is fetched
    with get(); `fail_transfers` then makes every copy a TransferError)."""

    def __init__(self, name: str = "fake", *, remote: bool = False, cpus: Iterable[int] = (0, 1),
                 worker_text: Callable[[str], str] = example):
        self.name, self.address, self.remote = name, name, remote
        self.cpus = sorted(cpus)
        self.worker_text = worker_text
        self.events: list[tuple] = []
        self.spawned: list[FakeProcess] = []
        self.ran: list[Completed] = []
        self.http_requests: list[str] = []
        self.calls: list[tuple[str, dict]] = []
        self.busy_ports: set[int] = set()      # port_is_free says False for these
        self.missing_tools: set[str] = set()   # which() finds none of these; spawn raises
        self.connections: dict[int, int] = {}  # pid -> established connections it holds
        self.accepted = 0                      # tcp_connections_accepted()
        self.fail_transfers: str | None = None
        self.listeners: dict[int, Listener] = {}
        self._runners: dict[str, Callable[[list[str]], Completed]] = {}
        self._procs: dict[int, FakeProcess] = {}
        self._pids = itertools.count(FIRST_PID)
        self._lock = threading.RLock()
        self._workdir: tempfile.TemporaryDirectory | None = None

    # ------------------------------------------------------------ what a test sets up
    def on_run(self, program: str, answer: Callable[[list[str]], Completed]) -> None:
        """run() of `program` (its argv[0]'s name) returns answer(argv)."""
        self._runners[program] = answer

    def serve(self, port: int, body: Any, status: int = 200, address: str = "127.0.0.1") -> Listener:
        """A listener on `port` answering every GET with `status` and `body` (JSON when
        not bytes or str)."""
        raw = body if isinstance(body, bytes) else body.encode() if isinstance(body, str) else None

        def answer(path: str) -> HttpAnswer:
            return HttpAnswer(status, {}, raw) if raw is not None else _json(status, body)
        listener = self.listeners[port] = Listener(address, port, answer)
        return listener

    def exit(self, pid: int, code: int = 1, *, with_children: bool = True) -> None:
        """A fake process ends by itself (a crash): with its children unless told not."""
        with self._lock:
            proc = self._procs[pid]
            self._end(proc, code)
            for child in self._descendants(proc) if with_children else []:
                self._end(child, code)
            self.events.append(("exit", pid, code))

    def process_of(self, pid: int) -> FakeProcess:
        return self._procs[pid]

    # ------------------------------------------------------------ the table
    def _new(self, ppid: int, argv: list[str], **kwargs) -> FakeProcess:
        proc = FakeProcess(self, next(self._pids), ppid, argv, **kwargs)
        self._procs[proc.pid] = proc
        if ppid in self._procs:
            self._procs[ppid].children.append(proc)
            proc.pgid = self._procs[ppid].pgid
        return proc

    def _descendants(self, proc: FakeProcess) -> list[FakeProcess]:
        out, queue = [], list(proc.children)
        while queue:
            p = queue.pop(0)
            out.append(p)
            queue.extend(p.children)
        return out

    def _alive(self, pid: int, created: float | None = None) -> FakeProcess | None:
        proc = self._procs.get(pid)
        if proc is None or proc.returncode is not None:
            return None
        return proc if created is None or proc.created == created else None

    def _end(self, proc: FakeProcess, code: int) -> None:
        if proc.returncode is None:
            proc.returncode = code

    def _signal(self, procs: list[FakeProcess], sig: int) -> None:
        with self._lock:
            for proc in procs:
                if proc.returncode is not None:
                    continue
                proc.signals.append(int(sig))
                if sig == signal.SIGKILL or (sig in ENDING and sig not in proc.ignores):
                    self._end(proc, -int(sig))

    # ------------------------------------------------------------ processes
    def spawn(self, argv: list[str], *, cwd=None, env: dict | None = None, log_path=None,
              cpus: list[int] | None = None) -> FakeProcess:
        own = [str(a) for a in argv]
        argv = pinned(own, cpus)
        if Path(own[0]).name in self.missing_tools:
            raise FileNotFoundError(2, "No such file or directory", own[0])
        env = dict(env or {})
        if log_path is not None:
            path = Path(self.path(log_path))
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "ab") as log:
                log.write(f"$ {' '.join(argv)}\n".encode())
        with self._lock:
            # taskset execs the program: the process shows the program's own command line
            leader = self._new(0, argv, env=env, cwd=cwd, log_path=log_path, cpus=cpus,
                               command_line=" ".join(own), threads=[Path(own[0]).name[:15]])
            self.spawned.append(leader)
            self.events.append(("spawn", leader.pid, argv))
            if "BENCH_SERVER_ID" in env and "BENCH_PORT" in env:
                self._start_server(leader, env)
            elif "BENCH_PROXY_NAME" in env and "BENCH_PROXY_PORT" in env:
                self._start_proxy(leader, env)
        return leader

    def _workers(self, leader: FakeProcess, count: int, match: str, match_in: str) -> None:
        """`count` children that a [workers] check of `match` counts."""
        text = leader.command_line
        if match_in == "environment" or (match and not re.search(match, text)):
            text = self.worker_text(match)
        for _ in range(count):
            if match_in == "environment":       # one NAME=value line that matches
                name, _, value = text.partition("=") if "=" in text else ("FAKE_WORKER", "", text)
                self._new(leader.pid, leader.args, env={**leader.env, name: value},
                          command_line=leader.command_line, threads=leader.threads)
            else:
                self._new(leader.pid, leader.args, env=leader.env, command_line=text,
                          threads=leader.threads)

    def _start_server(self, leader: FakeProcess, env: dict) -> None:
        from bench.core import manifest
        spec = manifest.discover().get(env["BENCH_SERVER_ID"])
        check = spec.worker_check if spec else None
        workers = int(env.get("BENCH_WORKERS", "1"))
        if check is not None and check.count == "threads":
            leader.threads = [leader.threads[0]] + [self.worker_text(check.match)] * workers
        else:
            self._workers(leader, workers, check.match if check else "",
                          check.match_in if check else "command")
        ping = {"server": env["BENCH_SERVER_ID"], "database": env.get("BENCH_DB", "none"),
                "orm": env.get("BENCH_ORM") == "1"}

        def answer(path: str) -> HttpAnswer:
            return _json(200, ping) if path == "/ping/" else _json(404, {"error": "not found"})
        port = int(env["BENCH_PORT"])
        self.listeners[port] = Listener(env.get("BENCH_HOST", "127.0.0.1"), port, answer, leader)

    def _start_proxy(self, leader: FakeProcess, env: dict) -> None:
        from bench.infra.proxy import available_proxies
        spec = available_proxies().get(env["BENCH_PROXY_NAME"])
        self._workers(leader, int(env.get("BENCH_WORKERS", "1")),
                      spec.workers_match if spec else "", "command")
        upstream = int(env["BENCH_UPSTREAM_PORT"])

        def answer(path: str) -> HttpAnswer:
            behind = self._listening(upstream)
            return behind.answer(path) if behind else _json(502, {"error": "bad gateway"})
        port = int(env["BENCH_PROXY_PORT"])
        self.listeners[port] = Listener(env.get("BENCH_PROXY_HOST", "127.0.0.1"), port, answer,
                                        leader)

    def run(self, argv: list[str], *, timeout: float, cwd=None, env: dict | None = None,
            on_start: Callable[[int], None] | None = None, stop_signal: int = signal.SIGINT,
            cpus: list[int] | None = None) -> Completed:
        own = [str(a) for a in argv]
        argv = pinned(own, cpus)
        program = Path(own[0]).name
        if program in self.missing_tools:
            raise FileNotFoundError(2, "No such file or directory", program)
        with self._lock:
            proc = self._new(0, argv, env=env, cwd=cwd, cpus=cpus)
            self.events.append(("run", proc.pid, argv))
        if on_start:
            on_start(proc.pid)
        runner = self._runners.get(program)
        done = runner(argv) if runner else Completed(argv, 0, "", "", 0.0, 0.0)
        self._end(proc, done.returncode)
        self.ran.append(done)
        return done

    def signal_group(self, pid: int, sig: int) -> bool:
        with self._lock:
            group = [p for p in self._procs.values() if p.pgid == pid and p.returncode is None]
            self.events.append(("signal_group", pid, int(sig)))
            self._signal(group, sig)
            return bool(group)

    def pin(self, pid: int, cpus: list[int]) -> None:
        proc = self._alive(pid)
        if proc is not None:
            proc.cpus = list(cpus)

    def affinity(self, pid: int) -> list[int] | None:
        proc = self._alive(pid)
        return None if proc is None else sorted(proc.cpus or self.cpus)

    # ------------------------------------------------------------ reading processes
    def process(self, pid: int) -> ProcessRef | None:
        proc = self._alive(pid)
        return proc.ref if proc else None

    def processes(self, pids: Iterable[int]) -> dict[int, ProcessRef]:
        return {pid: ref for pid in pids if (ref := self.process(pid)) is not None}

    def tree(self, pid: int) -> list[ProcessRef]:
        with self._lock:
            root = self._alive(pid)
            if root is None:
                return []
            return [p.ref for p in [root, *self._descendants(root)] if p.returncode is None]

    def running(self, refs: Iterable[ProcessRef], *, zombies: bool = True) -> list[ProcessRef]:
        return [r for r in refs if self._alive(r.pid, r.create_time)]

    def kill(self, ref: ProcessRef) -> bool:
        proc = self._alive(ref.pid, ref.create_time)
        self.events.append(("kill", ref.pid))
        if proc is not None:
            self._signal([proc], signal.SIGKILL)
        return proc is not None

    def thread_names(self, pid: int) -> list[str]:
        proc = self._alive(pid)
        return list(proc.threads) if proc else []

    def command_line(self, ref: ProcessRef) -> str:
        proc = self._alive(ref.pid, ref.create_time)
        return proc.command_line if proc else ""

    def environment(self, ref: ProcessRef) -> list[str]:
        proc = self._alive(ref.pid, ref.create_time)
        return [f"{k}={v}" for k, v in proc.env.items()] if proc else []

    def base_environment(self) -> dict[str, str]:
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/home/fake"}

    def connections_on_port(self, refs: list[ProcessRef], port: int) -> dict[int, int]:
        return {r.pid: self.connections.get(r.pid, 0) for r in refs
                if self._alive(r.pid, r.create_time)}

    def socket_memory(self, groups: dict[str, list[ProcessRef]]) -> dict[str, list[int]] | None:
        """SOCKET_BYTES for each open connection of a group's live processes."""
        out = {}
        for name, refs in groups.items():
            held = sum(self.connections.get(r.pid, 0) for r in refs
                       if self._alive(r.pid, r.create_time))
            out[name] = [held * SOCKET_BYTES, held]
        return out

    def read(self, ref: ProcessRef, memory: bool) -> ProcessFigures | None:
        """CPU_SHARE of a core since it started, MEMORY_MB of PSS; None once gone."""
        proc = self._alive(ref.pid, ref.create_time)
        if proc is None:
            return None
        cpu = (time.monotonic() - proc.started) * CPU_SHARE
        return ProcessFigures(cpu, MEMORY_MB, "pss") if memory else ProcessFigures(cpu, None, "")

    def read_many(self, refs: Iterable[ProcessRef],
                  memory: bool) -> dict[ProcessRef, ProcessFigures | None]:
        return {ref: self.read(ref, memory) for ref in refs}

    # ------------------------------------------------------------ network and tools
    def _listening(self, port: int) -> Listener | None:
        listener = self.listeners.get(port)
        if listener is not None and listener.owner is not None and not any(
                self._alive(p.pid) for p in [listener.owner, *self._descendants(listener.owner)]):
            return None
        return listener

    def port_is_free(self, port: int, host: str = "127.0.0.1") -> bool:
        return port not in self.busy_ports and self._listening(port) is None

    def tcp_connections_accepted(self) -> int:
        return self.accepted

    def which(self, tool: str) -> str | None:
        return None if tool in self.missing_tools else f"/usr/bin/{tool}"

    def http_get(self, url: str, timeout: float, headers: dict | None = None) -> HttpAnswer:
        """The answer of whatever the fake listens with on the URL's port (one accepted
        connection each); HttpUnanswered when nothing listens there."""
        parts = urlsplit(url)
        self.http_requests.append(url)
        listener = self._listening(parts.port or 80)
        if listener is None:
            raise HttpUnanswered(url, "ConnectionError")
        self.accepted += 1
        listener.requests.append(parts.path)
        return listener.answer(parts.path or "/")

    def call(self, op: str, **args) -> Any:
        """The agent's steps: its file steps for real (this machine's files), `rtt` and
        `listeners` from the table; the database steps are not faked."""
        self.calls.append((op, args))
        if op in FILE_STEPS:
            return STEPS[op](**args)
        if op == "rtt":
            return {"median_ms": 0.1, "min_ms": 0.1}
        if op == "listeners":
            listener = self._listening(args["port"])
            return [f"pid {listener.owner.pid} `{listener.owner.command_line}`"] \
                if listener is not None and listener.owner is not None else []
        raise NotImplementedError(f"FakeHost does not fake the step {op!r}")

    # ------------------------------------------------------------ paths, files, identity
    def path(self, path: Path | str) -> str:
        """A relative path is under the fake host's own folder (a temp folder)."""
        path = Path(path).expanduser()
        if path.is_absolute():
            return str(path)
        if self._workdir is None:   # removed at close(), or when the host is let go
            self._workdir = tempfile.TemporaryDirectory(prefix="webbench-fake-host-")
        return str(Path(self._workdir.name) / path)

    def project_path(self, local_path: Path | str) -> str:
        return str(local_path)

    def cache_dir(self) -> str:
        return str(CACHE_DIR)

    def _copy(self, source: str, dest: str) -> None:
        self.events.append(("copy", source, dest))
        if self.fail_transfers:
            raise TransferError(f"{self.name}: copying {source} to {dest} failed: "
                                f"{self.fail_transfers}")
        Path(dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest)

    def put(self, local_path: Path | str, host_path: Path | str) -> None:
        self._copy(str(local_path), self.path(host_path))

    def get(self, host_path: Path | str, local_path: Path | str) -> None:
        self._copy(self.path(host_path), str(local_path))

    def machine(self) -> dict:
        return {"hostname": self.name, "os": "Fake-1.0", "kernel": "1.0", "cpu_model": "fake",
                "cpu_count": len(self.cpus), "cpus_usable": len(self.cpus),
                "cpu_governor": None, "cpu_mhz_max": None, "memory_gb": 1.0,
                "load_average_at_start": [0.0, 0.0, 0.0], "python": "3.11.0"}

    def fingerprint(self) -> dict:
        return fingerprint_of(self)

    def describe_where(self) -> str:
        return f" on {self.name}" if self.remote else ""

    def close(self) -> None:
        """Ends whatever still runs, as RemoteHost.close stops what it started."""
        with self._lock:
            self._signal([p for p in self._procs.values() if p.returncode is None],
                         signal.SIGKILL)
            self.events.append(("close",))
            # its folder goes with it, as a remote host's run folder is removed at the end
            if self._workdir is not None:
                self._workdir.cleanup()
                self._workdir = None
