"""Where the databases come from: throwaway local servers, Docker Compose, or existing ones.

Every provider hands back one `db.Endpoint` per engine with the contract's table
created and filled, and cleans up what it started in `stop()`.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench.core.dataset import DATABASE_NAME
from bench.infra import db
from bench.infra.host import LOCAL
from bench.paths import REPO

COMPOSE_FILE = REPO / "docker-compose.yml"
DEFAULT_PORTS = {"postgres": 15432, "mysql": 13306}   # below 32768: never an ephemeral client port
BENCH_USER = "bench"
BENCH_PASSWORD = "bench"
# Enough for the largest connection budget plus the harness's own connections.
MAX_CONNECTIONS = 400
INIT_TIMEOUT_S = 120      # initdb / mariadb-install-db: seconds; more means something hangs
COMPOSE_TIMEOUT_S = 600   # docker compose up --wait, including pulling the images


class ProvisionError(RuntimeError):
    """A database could not be provided; the message says what to do."""


def require_free_port(port: int, what: str) -> None:
    if not LOCAL.port_is_free(port):
        raise ProvisionError(f"port {port} (for {what}) is busy: stop whatever listens there "
                             f"(`ss -ltnp 'sport = :{port}'` names it) or choose another port")


def docker_engine_answers() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        done = LOCAL.run(["docker", "info"], timeout=10)
    except OSError:
        return False
    return done.returncode == 0 and not done.timed_out


def choose_mode(requested: str) -> str:
    if requested != "auto":
        return requested
    return "docker" if docker_engine_answers() else "local"


# ---------------------------------------------------------------- local servers

def _find(candidates: list[str]) -> str | None:
    for c in candidates:
        if os.path.isabs(c) and os.access(c, os.X_OK):
            return c
        found = shutil.which(c)
        if found:
            return found
    return None


def postgres_bindir() -> str:
    """The newest installed PostgreSQL server binaries (Debian keeps them off PATH)."""
    if os.environ.get("BENCH_PG_BINDIR"):
        bindir = os.environ["BENCH_PG_BINDIR"]
        if not os.access(os.path.join(bindir, "postgres"), os.X_OK):
            raise ProvisionError(f"BENCH_PG_BINDIR={bindir} has no postgres binary")
        return bindir
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    for d in reversed(dirs):
        if os.access(os.path.join(d, "postgres"), os.X_OK):
            return d
    found = shutil.which("postgres")
    if found:
        return os.path.dirname(found)
    raise ProvisionError("PostgreSQL server binaries not found: install them with "
                         "`sudo apt-get install postgresql` (or set BENCH_PG_BINDIR)")


class LocalServer:
    """One throwaway database server process in a data folder of its own."""

    def __init__(self, engine: str, port: int, root: Path):
        self.engine, self.port, self.root = engine, port, root
        self.proc: subprocess.Popen | None = None
        self.log_path = root / f"{engine}.log"
        self.as_root = os.geteuid() == 0

    # PostgreSQL refuses to run as root, MariaDB should not: as root, both run as
    # their own system users (created by their Debian packages).
    def _as(self, user: str, argv: list[str]) -> list[str]:
        return ["runuser", "-u", user, "--", *argv] if self.as_root else argv

    def _chown(self, path: Path, user: str) -> None:
        if self.as_root:
            pw = pwd.getpwnam(user)
            os.chown(path, pw.pw_uid, pw.pw_gid)

    def _spawn(self, argv: list[str]) -> None:
        # own session: a Ctrl-C in the terminal reaches the harness, which then stops
        # the database in order instead of the database dying under a running server
        self.proc = LOCAL.spawn(argv, log_path=self.log_path)

    def pids(self) -> list[int]:
        """The database server's processes (postmaster and backends, or mysqld)."""
        if self.proc is None or self.proc.poll() is not None:
            return []
        return [p.pid for p in LOCAL.tree(self.proc.pid)]

    def start(self) -> db.Endpoint:
        require_free_port(self.port, f"the local {self.engine} server")
        if self.engine == "postgres":
            return self._start_postgres()
        return self._start_mysql()

    def _start_postgres(self) -> db.Endpoint:
        bindir = postgres_bindir()
        data = self.root / "pg"
        data.mkdir()
        self._chown(data, "postgres")
        init = LOCAL.run(
            self._as("postgres", [f"{bindir}/initdb", "-D", str(data), "-U", BENCH_USER,
                                  "--auth=trust", "-E", "UTF8", "--no-sync", "--locale=C"]),
            timeout=INIT_TIMEOUT_S)
        if init.returncode != 0:
            raise ProvisionError(f"initdb failed: {init.stderr.strip()[-800:]}")
        self._spawn(self._as("postgres", [
            f"{bindir}/postgres", "-D", str(data), "-p", str(self.port), "-k", str(data),
            "-c", "listen_addresses=127.0.0.1",
            "-c", f"max_connections={MAX_CONNECTIONS}",
            # The benchmark measures web frameworks, not this machine's disk: commits
            # return before the WAL reaches disk so `update user` is not fsync-bound
            # (docker-compose.yml sets the same).
            "-c", "synchronous_commit=off",
            "-c", "shared_buffers=256MB",
            # lets verification count the statements each request runs
            "-c", "shared_preload_libraries=pg_stat_statements",
            "-c", "pg_stat_statements.track=all",
        ]))
        ep = db.Endpoint("postgres", "127.0.0.1", self.port, BENCH_USER, BENCH_PASSWORD)
        self._wait(ep, database="postgres")
        with db.connect(ep, database="postgres") as conn:
            conn.execute(f"CREATE DATABASE {DATABASE_NAME}")
        with db.connect(ep) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return ep

    def _mysqld(self) -> tuple[str, list[str]]:
        server = _find(["mariadbd", "/usr/sbin/mariadbd", "mysqld", "/usr/sbin/mysqld"])
        if not server:
            raise ProvisionError("MariaDB/MySQL server binaries not found: install them with "
                                 "`sudo apt-get install mariadb-server`")
        installer = _find(["mariadb-install-db", "mysql_install_db"])
        return server, ([installer] if installer and "mariadb" in os.path.basename(server)
                        else [server, "--initialize-insecure"])

    def _start_mysql(self) -> db.Endpoint:
        server, installer = self._mysqld()
        # data, socket, pid and error log live in folders the server's user owns
        run = self.root / "mysql-run"
        data = self.root / "mysql"
        for folder in (run, data):
            folder.mkdir()
            self._chown(folder, "mysql")
        run_as = ["--user=mysql"] if self.as_root else []
        base = ["--no-defaults", f"--datadir={data}"]
        if installer[0] == server:   # MySQL 8: mysqld --initialize-insecure
            cmd = [server, *base, *run_as, "--initialize-insecure"]
        else:
            cmd = [installer[0], *base, *run_as, "--auth-root-authentication-method=normal",
                   "--skip-test-db"]
        init = LOCAL.run(cmd, timeout=INIT_TIMEOUT_S)
        if init.returncode != 0:
            raise ProvisionError(f"{os.path.basename(cmd[0])} failed: "
                                 f"{(init.stderr or init.stdout).strip()[-800:]}")
        sock = run / "mysql.sock"
        self._spawn([server, *base, *run_as, f"--socket={sock}",
                     f"--pid-file={run / 'mysql.pid'}", f"--port={self.port}",
                     "--bind-address=127.0.0.1", "--skip-name-resolve",
                     f"--max-connections={MAX_CONNECTIONS}",
                     # the contract stores DATETIME in UTC; NOW() must agree
                     "--default-time-zone=+00:00",
                     # same reason as synchronous_commit=off on PostgreSQL
                     "--innodb-flush-log-at-trx-commit=2",
                     "--innodb-buffer-pool-size=256M"])
        # root has no password on a fresh data folder and may only log in over the
        # socket, so the bench user is created through the socket
        self._bootstrap_mysql(sock)
        return db.Endpoint("mysql", "127.0.0.1", self.port, BENCH_USER, BENCH_PASSWORD)

    def _bootstrap_mysql(self, sock: Path) -> None:
        import pymysql
        deadline = time.monotonic() + 30
        while True:
            self._check_alive()
            try:
                conn = pymysql.connect(unix_socket=str(sock), user="root", autocommit=True)
                break
            except pymysql.err.OperationalError:
                if time.monotonic() > deadline:
                    raise ProvisionError(f"MariaDB/MySQL did not start: see {self.log_path}")
                time.sleep(0.1)
        with conn:
            cur = conn.cursor()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE_NAME}")
            cur.execute(f"CREATE USER IF NOT EXISTS '{BENCH_USER}'@'%' "
                        f"IDENTIFIED BY '{BENCH_PASSWORD}'")
            cur.execute(f"GRANT ALL ON {DATABASE_NAME}.* TO '{BENCH_USER}'@'%'")

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-1500:] if self.log_path.exists() else ""
            raise ProvisionError(f"the local {self.engine} server exited "
                                 f"(code {self.proc.returncode}):\n{tail}")

    def _wait(self, ep: db.Endpoint, database: str) -> None:
        deadline = time.monotonic() + 30
        while True:
            self._check_alive()
            try:
                db.connect(ep, database=database).close()
                return
            except Exception:  # noqa: BLE001 - not accepting yet
                if time.monotonic() > deadline:
                    raise ProvisionError(f"{self.engine} did not accept connections: "
                                         f"see {self.log_path}")
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        # PostgreSQL: SIGINT is its "fast" shutdown (SIGTERM would wait for clients)
        sig = signal.SIGINT if self.engine == "postgres" else signal.SIGTERM
        try:
            LOCAL.signal_group(self.proc.pid, sig)
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            LOCAL.signal_group(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


class LocalProvider:
    mode = "local"

    def __init__(self, engines: list[str], ports: dict[str, int] | None = None,
                 keep: bool = False):
        self.engines, self.ports, self.keep = engines, {**DEFAULT_PORTS, **(ports or {})}, keep
        self.servers: list[LocalServer] = []
        self.root: Path | None = None

    def start(self) -> dict[str, db.Endpoint]:
        # /tmp, not the clone: as root the postgres user must be able to reach it
        self.root = Path(tempfile.mkdtemp(prefix="webbench-db-"))
        self.root.chmod(0o755)
        endpoints = {}
        try:
            for engine in self.engines:
                server = LocalServer(engine, self.ports[engine], self.root)
                self.servers.append(server)
                endpoints[engine] = server.start()
                db.create_schema(endpoints[engine])
        except BaseException:
            self.stop()
            raise
        return endpoints

    def pids(self, engine: str) -> list[int]:
        return [pid for s in self.servers if s.engine == engine for pid in s.pids()]

    def stop(self) -> None:
        for server in reversed(self.servers):
            server.stop()
        self.servers.clear()
        if self.root and not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


class DockerProvider:
    """`docker compose up -d --wait` with the repository's docker-compose.yml."""
    mode = "docker"

    def __init__(self, engines: list[str], ports: dict[str, int] | None = None,
                 keep: bool = False):
        self.engines, self.keep = engines, keep
        self.ports = {**DEFAULT_PORTS, **(ports or {})}
        self.services = {"postgres": "postgres", "mysql": "mysql"}

    def _compose(self, *args: str):
        env = {**os.environ, "BENCH_PG_PORT": str(self.ports["postgres"]),
               "BENCH_MYSQL_PORT": str(self.ports["mysql"])}
        return LOCAL.run(["docker", "compose", "-f", str(COMPOSE_FILE), *args], env=env,
                         timeout=COMPOSE_TIMEOUT_S, stop_signal=signal.SIGTERM)

    def start(self) -> dict[str, db.Endpoint]:
        if not docker_engine_answers():
            raise ProvisionError("--db-mode docker: no Docker engine answers (`docker info` "
                                 "fails); use --db-mode local or external")
        for engine in self.engines:
            require_free_port(self.ports[engine], f"the {engine} container")
        up = self._compose("up", "-d", "--wait", *[self.services[e] for e in self.engines])
        if up.returncode != 0:
            raise ProvisionError(f"docker compose up failed:\n{up.stderr.strip()[-1500:]}")
        endpoints = {}
        for engine in self.engines:
            ep = db.Endpoint(engine, "127.0.0.1", self.ports[engine], BENCH_USER, BENCH_PASSWORD)
            db.wait_until_accepting(ep, timeout=60)
            db.create_schema(ep)
            endpoints[engine] = ep
        return endpoints

    def pids(self, engine: str) -> list[int]:
        return []      # inside a container: not read (yet); recorded as not measured

    def stop(self) -> None:
        if not self.keep:
            self._compose("down", "-v")


class ExternalProvider:
    """Existing databases given as DSNs; the harness only creates its two tables there."""
    mode = "external"

    def __init__(self, engines: list[str], dsns: dict[str, str | None]):
        self.engines, self.dsns = engines, dsns

    def start(self) -> dict[str, db.Endpoint]:
        endpoints = {}
        for engine in self.engines:
            dsn = self.dsns.get(engine)
            if not dsn:
                flag = "--postgres-dsn / BENCH_POSTGRES_DSN" if engine == "postgres" \
                    else "--mysql-dsn / BENCH_MYSQL_DSN"
                raise ProvisionError(f"--db-mode external needs a DSN for {engine}: {flag}")
            ep = db.endpoint_from_dsn(engine, dsn)
            db.wait_until_accepting(ep, timeout=10)
            db.create_schema(ep)
            endpoints[engine] = ep
        return endpoints

    def pids(self, engine: str) -> list[int]:
        return []      # another machine's processes: not ours to read

    def stop(self) -> None:
        pass


def provider(mode: str, engines: list[str], *, ports: dict[str, int] | None = None,
             dsns: dict[str, str | None] | None = None, keep: bool = False):
    mode = choose_mode(mode)
    if mode == "local":
        return LocalProvider(engines, ports, keep)
    if mode == "docker":
        return DockerProvider(engines, ports, keep)
    if mode == "external":
        return ExternalProvider(engines, dsns or {})
    raise ProvisionError(f"unknown --db-mode {mode!r}: choose auto, local, docker or external")


def for_settings(settings, engines: list[str]):
    """The provider a run's settings ask for (one place that maps flags to a provider)."""
    return provider(settings.db_mode, engines,
                    ports={"postgres": settings.pg_port, "mysql": settings.mysql_port},
                    dsns={"postgres": settings.postgres_dsn, "mysql": settings.mysql_dsn},
                    keep=settings.keep_db)
