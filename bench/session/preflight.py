"""Everything a command needs from its machines, checked before anything is provisioned or
built: the tools, the ports, a results folder it can write, the project set up on every
remote host. One message per problem, each saying how to fix it, so a command fails in a
second instead of after an hour of set-up.

What is checked depends on the command (`Needs`): `verify` sends no load, so it needs no
wrk; `build` starts nothing, so it needs no free port."""
from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.core.context import RunContext
from bench.core.plan import Case, databases_needed
from bench.core.settings import NO_PROXY
from bench.infra.host import LOCAL
from bench.infra.hosts import Hosts
from bench.load import oha, wrk
from bench.paths import REPO

INSTALL = "`make setup` installs it"


@dataclass(frozen=True)
class Needs:
    """What a command uses, so what its preflight checks."""
    load_generator: bool      # wrk (and oha for --rate) on the client's host
    listens: bool             # servers and local databases take their ports
    writes_results: bool      # a folder under --results-dir


FOR_RUN = Needs(load_generator=True, listens=True, writes_results=True)      # run, calibrate
FOR_VERIFY = Needs(load_generator=False, listens=True, writes_results=True)
FOR_SERVE = Needs(load_generator=False, listens=True, writes_results=False)
FOR_BUILD = Needs(load_generator=False, listens=False, writes_results=False)


class PreflightError(RuntimeError):
    """Something a command needs is missing; `problems` holds one sentence each."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def tools_needed(context: RunContext, cases: list[Case],
                 needs: Needs = FOR_RUN) -> dict[str, str]:
    """tool -> why it is needed."""
    need = {}
    if needs.load_generator:
        need["wrk"] = "the load generator"
        if any(c.load.rate is not None for c in cases):
            need["oha"] = "--rate (latency at fixed request rates)"
    if context.placement.pinned:
        need["taskset"] = "CPU placement (--server-cpus, --client-cpus, --db-cpus)"
    for spec in {c.variant.server.id: c.variant.server for c in cases}.values():
        for tool in spec.requires:
            need.setdefault(tool, f"the {spec.id} server")
    return need


def ports_needed(context: RunContext, cases: list[Case], db_mode: str | None = None,
                 needs: Needs = FOR_RUN) -> dict[int, tuple[str, str]]:
    """port -> (the role whose host must have it free, what it is for)."""
    if not needs.listens:
        return {}
    launch, source = context.launch, context.databases
    ports = {launch.port: ("server", "--port (the servers)")}
    if any(c.load.proxy != NO_PROXY for c in cases):
        ports[launch.upstream_port] = ("server", "--port + 1 (a server behind --behind's proxy)")
    if (db_mode or source.db_mode) in ("local", "auto"):
        engines = databases_needed(cases)
        if "postgres" in engines:
            ports[source.pg_port] = ("database", "--pg-port (the local PostgreSQL)")
        if "mysql" in engines:
            ports[source.mysql_port] = ("database", "--mysql-port (the local MariaDB)")
    return ports


def project_problems(host, role: str) -> list[str]:
    """A remote host must have the project set up where its workdir says: the same
    install (`make setup` there) that a single machine gets."""
    python = host.project_path(sys.executable)
    done = host.run(["test", "-x", python], timeout=10)
    if done.returncode != 0:
        return [f"{host.name} ({role}): the project is not set up in "
                f"{host.project_path(REPO)} ({python} is missing): clone it there and run "
                f"`make setup` on that machine (README, \"Several machines\")"]
    return []


def writable(folder: Path) -> str | None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def problems(context: RunContext, cases: list[Case], hosts: Hosts | None = None,
             needs: Needs = FOR_RUN) -> list[str]:
    """Everything missing, on every host that has a role (all here without --hosts)."""
    hosts = hosts or Hosts()
    settings = context.settings
    found = []
    hints = {"wrk": wrk.INSTALL_HINT, "oha": oha.INSTALL_HINT}
    client, server = hosts.for_role("client"), hosts.for_role("server")
    for tool, why in tools_needed(context, cases, needs).items():
        # the load generators run on the client's host, everything else on the server's
        host = client if tool in ("wrk", "oha") else server
        if not host.which(tool):
            where = f" on {host.name}" if host is not LOCAL else ""
            found.append(f"{hints.get(tool, f'{tool} is not installed (or not on PATH): {INSTALL}')}"
                         f"{where} (needed for {why})")
    for role in ("client", "server", "database"):
        if hosts.is_remote(role):
            found += project_problems(hosts.for_role(role), role)
    for port, (role, what) in ports_needed(context, cases, hosts.database_mode, needs).items():
        address = context.server_address if role == "server" else \
            (hosts.specs["database"].address if hosts.is_remote("database") else "127.0.0.1")
        if not hosts.for_role(role).port_is_free(port, address):
            found.append(f"port {port} ({what}) is busy: another process listens there; stop "
                         f"it or choose another port")
    if needs.writes_results:
        why = writable(Path(settings.results_dir))
        if why:
            found.append(f"cannot write results to {settings.results_dir} ({why}): choose "
                         f"--results-dir or fix its permissions")
    docker = context.databases.db_mode == "docker" or hosts.database_mode == "docker"
    if docker and databases_needed(cases) and not LOCAL.which("docker"):
        found.append("--db-mode docker needs the docker command: install Docker, or use "
                     "--db-mode local")
    return found
