"""What every database provider shares: the error, the credentials and ports, the bounds
of every wait, and the checks of ports and processes on the database's host."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import psutil

from bench.infra.host import LOCAL
from bench.infra.seam import Host, HostUnreachable, ProcessRef

DEFAULT_PORTS = {"postgres": 15432, "mysql": 13306}   # below 32768: never an ephemeral client port
BENCH_USER = "bench"
BENCH_PASSWORD = "bench"
# Enough for the largest connection budget plus the harness's own connections.
MAX_CONNECTIONS = 400
ALIVE_TIMEOUT_S = 2        # alive(): a connection must be accepted within this

# The names database server processes have (PostgreSQL's backends keep "postgres").
SERVER_PROCESS_NAMES = {"postgres", "postmaster", "mariadbd", "mysqld"}

# Addresses that name no host a client could connect to.
WILDCARD_ADDRESSES = {"", "*", "0.0.0.0", "::"}


class ProvisionError(RuntimeError):
    """A database could not be provided; the message says what to do."""


def tail(text: str, chars: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= chars else "..." + text[-chars:]


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def step(host: Host, op: str, **args):
    """One of the agent's host-side steps on the database's host (bench/infra/agent/
    steps.py); a failure is a ProvisionError naming the host and the step (not its
    arguments: one of them may be a file's content)."""
    try:
        return host.call(op, **args)
    except HostUnreachable:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure of a step is the provider's
        raise ProvisionError(f"{host.name}: the step `{op}` failed: {exc}") from exc


def require_free_port(port: int, what: str, host: Host = LOCAL,
                      address: str = "127.0.0.1") -> None:
    if not host.port_is_free(port, address):
        raise ProvisionError(f"port {port} (for {what}) is busy{host.describe_where()}: stop "
                             f"whatever listens there (`ss -ltnp 'sport = :{port}'` names it) "
                             f"or choose another port")


def port_listeners(port: int, host: Host = LOCAL) -> list[str]:
    """`pid command` of whatever listens on TCP `port` of `host` (for messages)."""
    try:
        return host.call("listeners", port=port)
    except Exception:  # noqa: BLE001 - only ever part of another message
        return []


def process_live(proc: psutil.Process) -> bool:
    """Running and not a zombie (a zombie holds no port, file or folder any more)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def find_server_processes(host: Host, folders: list[Path]) -> list[ProcessRef]:
    """The live database server processes of `folders` on `host` (see the agent's
    procfs.server_processes)."""
    names = [str(f) for f in folders]
    found = step(host, "server_processes", folders=names, data=names[0],
                 names=sorted(SERVER_PROCESS_NAMES))
    return list(host.processes([pid for pid, *_ in found]).values())


def psutil_of(ref: ProcessRef) -> psutil.Process | None:
    """The psutil.Process behind a ref of this machine, None once it is gone."""
    try:
        proc = psutil.Process(ref.pid)
        return proc if proc.create_time() == ref.create_time else None
    except psutil.Error:
        return None


def server_processes_in(folders: list[Path]) -> list[psutil.Process]:
    """find_server_processes on this machine, as psutil.Process."""
    return [p for p in map(psutil_of, find_server_processes(LOCAL, folders)) if p is not None]
