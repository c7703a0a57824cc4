"""PostgreSQL as a throwaway server: where its binaries are, how its data folder is made,
how it is started, when it is ready and how it is stopped (the rest, common to the
engines, is throwaway.py's)."""
from __future__ import annotations

import signal
from pathlib import Path

from bench.core.dataset import DATABASE_NAME
from bench.infra import db
from bench.infra.databases.common import (BENCH_PASSWORD, BENCH_USER, MAX_CONNECTIONS,
                                          ProvisionError, step)
from bench.infra.host import LOCAL
from bench.infra.seam import Host

# Clients on other hosts (the harness, a web server) log in to PostgreSQL with the bench
# password; on its own host the local socket and loopback stay `trust` (initdb's rules,
# which come first), as they always were.
PG_HBA_REMOTE = ("# webbench: the bench user from any other host, with its password\n"
                 f"host all {BENCH_USER} 0.0.0.0/0 scram-sha-256\n"
                 f"host all {BENCH_USER} ::/0 scram-sha-256\n")


def postgres_bindir(host: Host = LOCAL) -> str:
    """The newest installed PostgreSQL server binaries on `host` (BENCH_PG_BINDIR, in
    that host's environment, chooses others)."""
    override = host.base_environment().get("BENCH_PG_BINDIR")
    bindir, unusable = step(host, "postgres_bindir", override=override)
    if unusable:
        raise ProvisionError(f"BENCH_PG_BINDIR={override} has no postgres binary")
    if bindir is None:
        raise ProvisionError("PostgreSQL server binaries not found: install them with "
                             "`sudo apt-get install postgresql` (or set BENCH_PG_BINDIR)"
                             + host.describe_where())
    return bindir


class Postgres:
    engine = "postgres"
    system_user = "postgres"         # who runs it when the harness is root
    # SIGINT is the "fast" shutdown, what `pg_ctl stop -m fast` sends (SIGTERM would
    # wait for the clients)
    stop_signal = signal.SIGINT
    ready_database = "postgres"      # the one database that exists before after_start()

    def layout(self, root: Path) -> tuple[Path, Path, list[Path]]:
        """(data folder, pid file, every folder of the server)."""
        data = root / "pg"
        return data, data / "postmaster.pid", [data]

    def prepare(self, server) -> list[str]:
        """Make and initialise the data folder; the command that starts the server."""
        host = server.host
        bindir = postgres_bindir(host)
        server.make_folder(server.data, self.system_user)
        # the bench user's password, for clients on other hosts (PG_HBA_REMOTE); outside
        # the data folder, which initdb wants empty
        password_file = server.root / "pg-password"
        step(host, "write_file", path=str(password_file), text=BENCH_PASSWORD + "\n", mode=0o644)
        try:
            server.init("initdb", server.as_user(self.system_user, [
                f"{bindir}/initdb", "-D", str(server.data), "-U", BENCH_USER, "--auth=trust",
                f"--pwfile={password_file}", "-E", "UTF8", "--no-sync", "--locale=C"]))
        finally:
            step(host, "remove", paths=[str(password_file)])
        step(host, "append", path=str(server.data / "pg_hba.conf"), text=PG_HBA_REMOTE)
        return server.as_user(self.system_user, [
            f"{bindir}/postgres", "-D", str(server.data), "-p", str(server.port),
            "-k", str(server.data),
            "-c", f"listen_addresses={server.listen_address}",
            "-c", f"max_connections={MAX_CONNECTIONS}",
            # The benchmark measures web frameworks, not this machine's disk: commits
            # return before the WAL reaches disk so `update user` is not fsync-bound
            # (docker-compose.yml sets the same).
            "-c", "synchronous_commit=off",
            "-c", "shared_buffers=256MB",
            # lets verification count the statements each request runs
            "-c", "shared_preload_libraries=pg_stat_statements",
            "-c", "pg_stat_statements.track=all",
        ])

    def after_start(self, ep: db.Endpoint) -> None:
        """The contract's database and the statement counter, once it accepts the harness."""
        with db.connect(ep, database="postgres") as conn:
            conn.execute(f"CREATE DATABASE {DATABASE_NAME}")
        with db.connect(ep) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
