"""Everything a run needs from this machine, checked before anything is provisioned or
built: the tools, the ports, a results folder it can write. One message per problem, each
saying how to fix it, so a run fails in a second instead of after an hour of set-up."""
from __future__ import annotations

import tempfile
from pathlib import Path

from bench.core.plan import Case, databases_needed
from bench.core.settings import NO_PROXY, Settings
from bench.infra.host import LOCAL, LocalHost

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


def ports_needed(settings: Settings, cases: list[Case]) -> dict[int, str]:
    ports = {settings.port: "--port (the servers)"}
    if any(c.load.proxy != NO_PROXY for c in cases):
        ports[settings.upstream_port] = "--port + 1 (a server behind --behind's proxy)"
    if settings.db_mode in ("local", "auto"):
        engines = databases_needed(cases)
        if "postgres" in engines:
            ports[settings.pg_port] = "--pg-port (the local PostgreSQL)"
        if "mysql" in engines:
            ports[settings.mysql_port] = "--mysql-port (the local MariaDB)"
    return ports


def writable(folder: Path) -> str | None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def problems(settings: Settings, cases: list[Case], host: LocalHost = LOCAL) -> list[str]:
    found = []
    from bench.load import oha, wrk
    hints = {"wrk": wrk.INSTALL_HINT, "oha": oha.INSTALL_HINT}
    for tool, why in tools_needed(settings, cases).items():
        if not host.which(tool):
            found.append(f"{hints.get(tool, f'{tool} is not installed (or not on PATH): {INSTALL}')}"
                         f" (needed for {why})")
    for port, what in ports_needed(settings, cases).items():
        if not host.port_is_free(port, settings.host):
            found.append(f"port {port} ({what}) is busy: another process listens there; stop "
                         f"it or choose another port")
    why = writable(Path(settings.results_dir))
    if why:
        found.append(f"cannot write results to {settings.results_dir} ({why}): choose "
                     f"--results-dir or fix its permissions")
    if settings.db_mode == "docker" and not host.which("docker"):
        found.append("--db-mode docker needs the docker command: install Docker, or use "
                     "--db-mode local")
    return found
