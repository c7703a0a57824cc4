"""Everything a run needs from this machine, checked before anything is provisioned or
built: the tools, the ports, a results folder it can write. One message per problem, each
saying how to fix it, so a run fails in a second instead of after an hour of set-up."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench.core.plan import Case, databases_needed
from bench.core.settings import NO_PROXY, Settings
from bench.infra.host import LOCAL
from bench.paths import REPO

INSTALL = "`make setup` installs it"


def tools_needed(settings: Settings, cases: list[Case]) -> dict[str, str]:
    """tool -> why it is needed."""
    need = {"wrk": "the load generator"}
    if any(c.load.rate is not None for c in cases):
        need["oha"] = "--rate (latency at fixed request rates)"
    if any(settings.cpus(side) for side in ("server", "client", "db")):
        need["taskset"] = "CPU placement (--server-cpus, --client-cpus, --db-cpus)"
    for spec in {c.variant.server.id: c.variant.server for c in cases}.values():
        for tool in spec.requires:
            need.setdefault(tool, f"the {spec.id} server")
    return need


def ports_needed(settings: Settings, cases: list[Case],
                 db_mode: str | None = None) -> dict[int, tuple[str, str]]:
    """port -> (the role whose host must have it free, what it is for)."""
    ports = {settings.port: ("server", "--port (the servers)")}
    if any(c.load.proxy != NO_PROXY for c in cases):
        ports[settings.upstream_port] = ("server", "--port + 1 (a server behind --behind's proxy)")
    if (db_mode or settings.db_mode) in ("local", "auto"):
        engines = databases_needed(cases)
        if "postgres" in engines:
            ports[settings.pg_port] = ("database", "--pg-port (the local PostgreSQL)")
        if "mysql" in engines:
            ports[settings.mysql_port] = ("database", "--mysql-port (the local MariaDB)")
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


def problems(settings: Settings, cases: list[Case], hosts=None) -> list[str]:
    """Everything missing, on every host that has a role (all here without --hosts)."""
    from bench.infra.hosts import Hosts
    from bench.load import oha, wrk
    hosts = hosts or Hosts()
    found = []
    hints = {"wrk": wrk.INSTALL_HINT, "oha": oha.INSTALL_HINT}
    client, server = hosts.for_role("client"), hosts.for_role("server")
    for tool, why in tools_needed(settings, cases).items():
        # the load generators run on the client's host, everything else on the server's
        host = client if tool in ("wrk", "oha") else server
        if not host.which(tool):
            where = f" on {host.name}" if host is not LOCAL else ""
            found.append(f"{hints.get(tool, f'{tool} is not installed (or not on PATH): {INSTALL}')}"
                         f"{where} (needed for {why})")
    for role in ("client", "server", "database"):
        if hosts.is_remote(role):
            found += project_problems(hosts.for_role(role), role)
    for port, (role, what) in ports_needed(settings, cases, hosts.database_mode).items():
        address = settings.host if role == "server" else \
            (hosts.specs["database"].address if hosts.is_remote("database") else "127.0.0.1")
        if not hosts.for_role(role).port_is_free(port, address):
            found.append(f"port {port} ({what}) is busy: another process listens there; stop "
                         f"it or choose another port")
    why = writable(Path(settings.results_dir))
    if why:
        found.append(f"cannot write results to {settings.results_dir} ({why}): choose "
                     f"--results-dir or fix its permissions")
    docker = settings.db_mode == "docker" or hosts.database_mode == "docker"
    if docker and databases_needed(cases) and not LOCAL.which("docker"):
        found.append("--db-mode docker needs the docker command: install Docker, or use "
                     "--db-mode local")
    return found
