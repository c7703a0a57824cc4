"""The Host protocol: the one seam through which the harness starts every process, reads
every resource and asks every liveness question, and the values that cross it.

Three hosts implement it: LocalHost (bench/infra/host.py, this machine), RemoteHost
(bench/infra/remote.py, a machine reached over SSH) and FakeHost (bench/infra/fake.py, no
processes at all, for unit tests of the orchestration). Code above infra/ takes a `Host`
and never asks which one it has: what differs between hosts is a method or an attribute
of the host (`remote`, `describe_where()`), never a type test.
"""
from __future__ import annotations

import json
import platform
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol, runtime_checkable


class HostUnreachable(RuntimeError):
    """A host the harness can no longer talk to: its SSH connection ended, or its agent
    did not answer the liveness probe. Raised by every call on that host from then on;
    the message names the host and what failed (which operation, the underlying error)."""

    def __init__(self, host: str, reason: str, during: str | None = None):
        super().__init__(f"host {host} is unreachable: {reason}"
                         + (f" ({during} was not done)" if during else ""))
        self.host, self.reason, self.during = host, reason, during


class TransferError(OSError):
    """A file could not be copied to or from a host (e.g. its sshd offers no SFTP) while
    the host itself still answers: a warning on the case that wanted the file, never a
    reason to give up on the host."""


class HttpUnanswered(ConnectionError):
    """An HTTP request got no answer (refused, reset, timed out); `reason` is the
    underlying error's name, e.g. "ConnectionError" or "ReadTimeout"."""

    def __init__(self, url: str, reason: str):
        super().__init__(f"GET {url}: no answer ({reason})")
        self.url, self.reason = url, reason


@dataclass(frozen=True)
class ProcessRef:
    """One process on one host: its pid and its start time (a pid reused by another
    process is another ProcessRef). Host-neutral: every operation on it is a method of
    the host that listed it, e.g. `host.read(ref, memory=True)`.

    `create_time` is the host's own stamp (epoch seconds on LocalHost, clock ticks since
    boot on RemoteHost): compare it only with refs of the same host."""
    pid: int
    create_time: float
    host: object = field(default=None, compare=False, repr=False)


@dataclass
class Completed:
    """A finished command: its status, output, CPU time (user + system) and wall time."""
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str
    cpu_s: float
    wall_s: float
    timed_out: bool = False


@dataclass
class ProcessFigures:
    """One reading of a process: cumulative CPU seconds and proportional memory."""
    cpu_s: float
    memory_mb: float | None        # PSS where readable, else RSS
    memory_kind: str
    # the PSS's parts in MiB: {"anon", "file", "shmem"} (bench.infra.agent.procfs.memory_of)
    split: dict | None = None


@dataclass(frozen=True)
class HttpAnswer:
    """An HTTP response: status, headers, body."""
    status: int
    headers: dict
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not."""
        return json.loads(self.body)


class Spawned(Protocol):
    """What Host.spawn returns: the part of subprocess.Popen the harness uses."""
    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...
    def wait(self, timeout: float | None = None) -> int: ...
    def send_signal(self, sig: int) -> None: ...


@runtime_checkable
class Host(Protocol):
    """A machine the harness runs roles on. See LocalHost for each method's meaning."""
    name: str                  # for messages and the results ("local", "server (bench@x)")
    address: str
    remote: bool               # its files are another machine's: reached with put/get

    # processes: each started in a session (process group) of its own
    def spawn(self, argv: list[str], *, cwd: Path | str | None = None, env: dict | None = None,
              log_path: Path | str | None = None, cpus: list[int] | None = None) -> Spawned: ...
    def run(self, argv: list[str], *, timeout: float, cwd: Path | str | None = None,
            env: dict | None = None, on_start: Callable[[int], None] | None = None,
            stop_signal: int = signal.SIGINT, cpus: list[int] | None = None) -> Completed: ...
    def signal_group(self, pid: int, sig: int) -> bool: ...
    def pin(self, pid: int, cpus: list[int]) -> None: ...
    def affinity(self, pid: int) -> list[int] | None: ...

    # reading processes
    def process(self, pid: int) -> ProcessRef | None: ...
    def processes(self, pids: Iterable[int]) -> dict[int, ProcessRef]: ...
    def tree(self, pid: int) -> list[ProcessRef]: ...
    def running(self, refs: Iterable[ProcessRef], *, zombies: bool = True) -> list[ProcessRef]: ...
    def kill(self, ref: ProcessRef) -> bool: ...
    def thread_names(self, pid: int) -> list[str]: ...
    def command_line(self, ref: ProcessRef) -> str: ...
    def environment(self, ref: ProcessRef) -> list[str]: ...
    def base_environment(self) -> dict[str, str]: ...
    def connections_on_port(self, refs: list[ProcessRef], port: int) -> dict[int, int]: ...
    def socket_memory(self, groups: dict[str, list[ProcessRef]]) -> dict[str, list[int]] | None: ...
    def read(self, ref: ProcessRef, memory: bool) -> ProcessFigures | None: ...
    def read_many(self, refs: Iterable[ProcessRef],
                  memory: bool) -> dict[ProcessRef, ProcessFigures | None]: ...

    # network and tools
    def port_is_free(self, port: int, host: str = "127.0.0.1") -> bool: ...
    def tcp_connections_accepted(self) -> int: ...
    def which(self, tool: str) -> str | None: ...
    def http_get(self, url: str, timeout: float,
                 headers: dict | None = None) -> HttpAnswer: ...

    # the agent's host-side steps (bench/infra/agent/steps.py), by name
    def call(self, op: str, **args) -> Any: ...

    # paths, files and identity
    def path(self, path: Path | str) -> str: ...
    def project_path(self, local_path: Path | str) -> str: ...
    def cache_dir(self) -> str: ...
    def put(self, local_path: Path | str, host_path: Path | str) -> None: ...
    def get(self, host_path: Path | str, local_path: Path | str) -> None: ...
    def machine(self) -> dict: ...
    def fingerprint(self) -> dict: ...
    def describe_where(self) -> str: ...
    def close(self) -> str | None: ...


def pinned(argv: list[str], cpus: list[int] | None) -> list[str]:
    """argv started on `cpus` only. taskset sets the mask and then execs argv (same pid),
    so the mask is in place before the program forks a single worker; setting it after
    the start would race with the workers the program forks at once."""
    if not cpus:
        return list(argv)
    return ["taskset", "--cpu-list", ",".join(map(str, cpus)), *argv]


def born_in(argv: list[str], procs_file: str) -> list[str]:
    """argv started inside a cgroup: a shell writes its own pid into the cgroup's
    `cgroup.procs` and then execs argv (same pid), so the program's first page is already
    charged there (a memory cap, bench.infra.memory_cap). Combined with pinned(), taskset
    execs the shell, which execs the program: still one pid."""
    return ["sh", "-c", 'echo $$ > "$0" && exec "$@"', procs_file, *argv]


def http_get(url: str, timeout: float, headers: dict | None = None) -> HttpAnswer:
    """GET url from the harness's machine (where the readiness checks have always been
    made from, whichever host runs the server); HttpUnanswered when nothing answers.
    Its connection is closed before this returns: none of the harness's own stays open
    to a server while the load runs."""
    import requests
    try:
        r = requests.get(url, timeout=timeout, headers=headers)
    except requests.RequestException as exc:
        raise HttpUnanswered(url, type(exc).__name__) from None
    return HttpAnswer(r.status_code, dict(r.headers), r.content)


# the tools whose versions a host's environment block records (the first line each prints)
TOOL_COMMANDS = {"wrk": ["wrk", "-v"], "rustc": ["rustc", "--version"], "go": ["go", "version"],
                 "node": ["node", "--version"],
                 # the open-model load generator, and the ceiling server and reverse proxy
                 "oha": ["oha", "--version"], "nginx": ["nginx", "-v"]}


def first_line(host: Host, argv: list[str]) -> str | None:
    """The first line a command prints on `host` (None when it is missing or silent)."""
    if not host.which(argv[0]):
        return None
    try:
        done = host.run(argv, timeout=10)
    except OSError:
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else None


def fingerprint_of(host: Host) -> dict:
    """A host's environment block: its machine() with the tools' versions under "tools"
    ("python": the interpreter its machine() ran on)."""
    machine = host.machine()
    tools = {"python": machine.pop("python", None) or platform.python_version()}
    tools.update({name: first_line(host, argv) for name, argv in TOOL_COMMANDS.items()})
    return {**machine, "tools": tools}
