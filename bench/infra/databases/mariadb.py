"""MariaDB (or MySQL) as a throwaway server, the engine called "mysql" in the contract:
where its binaries are, how its data folder is made, how it is started, when it is ready
and how it is stopped (the rest, common to the engines, is throwaway.py's)."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from bench.core.dataset import DATABASE_NAME
from bench.infra import db
from bench.infra.databases.common import (BENCH_PASSWORD, BENCH_USER, MAX_CONNECTIONS,
                                          ProvisionError, step)
from bench.infra.host import LOCAL
from bench.infra.seam import Host

# Run by MariaDB itself as it starts (--init-file), before it accepts connections: the
# bench user and database exist without the harness logging in as root over the socket,
# which it cannot reach when the database runs on another host.
MYSQL_BOOTSTRAP = (f"CREATE DATABASE IF NOT EXISTS {DATABASE_NAME};\n"
                   f"CREATE USER IF NOT EXISTS '{BENCH_USER}'@'%' "
                   f"IDENTIFIED BY '{BENCH_PASSWORD}';\n"
                   f"GRANT ALL ON {DATABASE_NAME}.* TO '{BENCH_USER}'@'%';\n")


def binaries(host: Host = LOCAL) -> tuple[str, list[str]]:
    """(the server binary, the command that initialises a data folder) on `host`."""
    server, installer = step(host, "mysqld_binaries")
    if not server:
        raise ProvisionError("MariaDB/MySQL server binaries not found: install them with "
                             "`sudo apt-get install mariadb-server`" + host.describe_where())
    return server, ([installer] if installer and "mariadb" in os.path.basename(server)
                    else [server, "--initialize-insecure"])


class MariaDB:
    engine = "mysql"
    system_user = "mysql"            # who runs it when the harness is root
    stop_signal = signal.SIGTERM     # its normal shutdown
    ready_database = None            # the bootstrap made the bench database already

    def layout(self, root: Path) -> tuple[Path, Path, list[Path]]:
        """(data folder, pid file, every folder of the server): data, socket, pid and
        error log live in folders the server's user owns."""
        data, run_dir = root / "mysql", root / "mysql-run"
        return data, run_dir / "mysql.pid", [data, run_dir]

    def prepare(self, server) -> list[str]:
        """Make and initialise the data folder; the command that starts the server."""
        host, run_dir = server.host, server.folders[1]
        binary, installer = binaries(host)
        for folder in (run_dir, server.data):
            server.make_folder(folder, self.system_user)
        run_as = ["--user=mysql"] if server.as_root else []
        # a tmpdir of its own: bootstraps running at once (the test suite's workers, two
        # runs) name their temporary tables alike in the shared /tmp, and one of them
        # failed ("Could not remove temporary table '/tmp/#sql-temptable-...'", then
        # "Unknown table 'mysql.tmp_user_sys'"): 1 of 4 concurrent installs; 0 of 12 so
        base = ["--no-defaults", f"--datadir={server.data}", f"--tmpdir={run_dir}"]
        if installer[0] == binary:   # MySQL 8: mysqld --initialize-insecure
            cmd = [binary, *base, *run_as, "--initialize-insecure"]
        else:
            cmd = [installer[0], *base, *run_as, "--auth-root-authentication-method=normal",
                   "--skip-test-db"]
        server.init(os.path.basename(cmd[0]), cmd)
        init_file = run_dir / "bootstrap.sql"
        step(host, "write_file", path=str(init_file), text=MYSQL_BOOTSTRAP, mode=0o644)
        return [binary, *base, *run_as, f"--socket={run_dir / 'mysql.sock'}",
                f"--pid-file={server.pid_file}", f"--port={server.port}",
                f"--bind-address={server.listen_address}", "--skip-name-resolve",
                f"--init-file={init_file}",
                f"--max-connections={MAX_CONNECTIONS}",
                # the contract stores DATETIME in UTC; NOW() must agree
                "--default-time-zone=+00:00",
                # same reason as synchronous_commit=off on PostgreSQL
                "--innodb-flush-log-at-trx-commit=2",
                "--innodb-buffer-pool-size=256M"]

    def after_start(self, ep: db.Endpoint) -> None:
        """Nothing: the bootstrap file did it before the server accepted anyone."""
