"""Where the databases come from: throwaway servers, Docker Compose, or existing ones.

Every provider hands back one `db.Endpoint` per engine with the contract's table
created and filled, and offers the same four calls to the run:

    start() -> {engine: Endpoint}   provide every engine (ProvisionError when it cannot)
    alive(engine) -> bool           cheap: is the database still there and answering?
    restart(engine) -> Endpoint     bring a dead database back, table filled, same port
    stop() -> list[str]             clean up what the provider started; [] when nothing
                                    of it is left, else what is (never raises)

and `pids(engine)`: the database server's processes, as pids of `provider.host`.

One module per provider (throwaway.py: `--db-mode local`, servers started from the
binaries installed on the database's host, which may be another machine; docker.py;
external.py) and one per engine of the throwaway servers (postgres.py, mariadb.py).
A new engine is a module with the engine's class and a line in throwaway.ENGINES.
"""
from __future__ import annotations

from bench.infra.databases.common import (ALIVE_TIMEOUT_S, BENCH_PASSWORD, BENCH_USER,
                                          DEFAULT_PORTS, MAX_CONNECTIONS, SERVER_PROCESS_NAMES,
                                          WILDCARD_ADDRESSES, ProvisionError,
                                          find_server_processes, port_listeners, process_live,
                                          require_free_port, server_processes_in)
from bench.infra.databases.docker import (COMPOSE_FILE, DockerProvider, docker_engine_answers,
                                          docker_transport)
from bench.infra.databases.external import ExternalProvider
from bench.infra.databases.postgres import postgres_bindir
from bench.infra.databases.throwaway import (ENGINES, INIT_TIMEOUT_S, KILL_TIMEOUT_S,
                                             PORT_FREE_TIMEOUT_S, START_TIMEOUT_S,
                                             STOP_TIMEOUT_S, ThrowawayProvider,
                                             ThrowawayServer)
from bench.infra.host import LOCAL
from bench.infra.seam import Host

__all__ = [
    "ALIVE_TIMEOUT_S", "BENCH_PASSWORD", "BENCH_USER", "COMPOSE_FILE", "DEFAULT_PORTS",
    "ENGINES", "INIT_TIMEOUT_S", "KILL_TIMEOUT_S", "MAX_CONNECTIONS", "PORT_FREE_TIMEOUT_S",
    "SERVER_PROCESS_NAMES", "START_TIMEOUT_S", "STOP_TIMEOUT_S", "WILDCARD_ADDRESSES",
    "DockerProvider", "ExternalProvider", "ProvisionError", "ThrowawayProvider",
    "ThrowawayServer", "choose_mode", "docker_engine_answers", "docker_transport",
    "find_server_processes", "for_settings", "local_binaries_missing", "port_listeners",
    "postgres_bindir",
    "process_live", "provider", "require_free_port", "server_processes_in"]


def local_binaries_missing(engines: list[str]) -> list[str]:
    """Why local mode cannot start `engines` here ([] when it can)."""
    from bench.infra.databases.mariadb import binaries
    missing = []
    for engine, find in (("postgres", postgres_bindir), ("mysql", binaries)):
        if engine in engines:
            try:
                find()
            except ProvisionError as exc:
                missing.append(str(exc))
    return missing


def choose_mode(requested: str, engines: list[str] = ("postgres", "mysql")) -> str:
    """--db-mode auto: local where the database binaries are installed (the set-up
    installs them), else docker where an engine answers, else local (whose error then
    says what to install). Local first: a run's databases must not change with whether
    someone started a Docker engine for something else (the test suite starts one for
    its docker tests)."""
    if requested != "auto":
        return requested
    if not local_binaries_missing(list(engines)):
        return "local"
    return "docker" if docker_engine_answers() else "local"


def provider(mode: str, engines: list[str], *, ports: dict[str, int] | None = None,
             dsns: dict[str, str | None] | None = None, keep: bool = False,
             host: Host = LOCAL, listen_address: str = "127.0.0.1",
             images: str | None = None):
    """The provider for a --db-mode. `host` runs the throwaway servers of "local" (and
    "auto" means "local" there: Docker is only looked for on this machine);
    `listen_address`: theirs, and their Endpoints' host; `images`: docker mode's
    --db-images."""
    mode = "local" if host.remote and mode == "auto" else choose_mode(mode, engines)
    if mode == "local":
        return ThrowawayProvider(engines, ports, keep, host=host, listen_address=listen_address)
    if mode == "docker":
        if host.remote:
            return DockerProvider(engines, ports, keep, docker_host=docker_transport(host),
                                  listen_address=listen_address, image_source=images)
        return DockerProvider(engines, ports, keep, image_source=images)
    if mode == "external":
        return ExternalProvider(engines, dsns or {})
    raise ProvisionError(f"unknown --db-mode {mode!r}: choose auto, local, docker or external")


def for_settings(settings, engines: list[str], *, host: Host = LOCAL,
                 listen_address: str = "127.0.0.1", mode: str | None = None):
    """The provider a run's settings ask for (one place that maps flags to a provider);
    reads settings.db_mode, pg_port, mysql_port, postgres_dsn, mysql_dsn and keep_db.
    `host` and `listen_address` as in provider(); `mode`: the hosts file's [database]
    mode, which wins over --db-mode for that host."""
    return provider(mode or settings.db_mode, engines,
                    ports={"postgres": settings.pg_port, "mysql": settings.mysql_port},
                    dsns={"postgres": settings.postgres_dsn, "mysql": settings.mysql_dsn},
                    keep=settings.keep_db, host=host, listen_address=listen_address,
                    images=getattr(settings, "db_images", None))
