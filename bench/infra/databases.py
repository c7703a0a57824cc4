"""Where the databases come from: throwaway local servers, Docker Compose, or existing ones.

Every provider hands back one `db.Endpoint` per engine with the contract's table
created and filled, and offers the same four calls to the run:

    start() -> {engine: Endpoint}   provide every engine (ProvisionError when it cannot)
    alive(engine) -> bool           cheap: is the database still there and answering?
    restart(engine) -> Endpoint     bring a dead database back, table filled, same port
    stop() -> list[str]             clean up what the provider started; [] when nothing
                                    of it is left, else what is (never raises)

Every wait is bounded and a ProvisionError says what timed out, with the log's tail.
"""
from __future__ import annotations

import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

from bench.core.dataset import DATABASE_NAME
from bench.infra import db, state
from bench.infra.host import LOCAL, Completed
from bench.paths import REPO

COMPOSE_FILE = REPO / "docker-compose.yml"
DEFAULT_PORTS = {"postgres": 15432, "mysql": 13306}   # below 32768: never an ephemeral client port
BENCH_USER = "bench"
BENCH_PASSWORD = "bench"
# Enough for the largest connection budget plus the harness's own connections.
MAX_CONNECTIONS = 400

# Every wait has a bound; past it something hangs, and the error says what.
INIT_TIMEOUT_S = 120       # initdb / mariadb-install-db
START_TIMEOUT_S = 60       # a local server from its start to accepting connections
STOP_TIMEOUT_S = 20        # fast shutdown (PostgreSQL) / SIGTERM (MariaDB) before SIGKILL
KILL_TIMEOUT_S = 10        # after SIGKILL, for the kernel to take the processes away
PORT_FREE_TIMEOUT_S = 10   # for the port to be free once the processes are gone
ALIVE_TIMEOUT_S = 2        # alive(): a connection must be accepted within this
COMPOSE_WAIT_S = 180       # docker compose up --wait-timeout: containers to healthy
COMPOSE_UP_TIMEOUT_S = 900  # the whole `docker compose up`, pulling images included
COMPOSE_TIMEOUT_S = 120    # down, ps, logs
ACCEPT_TIMEOUT_S = 60      # a container's database, healthy, to accept the harness

# The names database server processes have (PostgreSQL's backends keep "postgres").
SERVER_PROCESS_NAMES = {"postgres", "postmaster", "mariadbd", "mysqld"}


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


def _tail(text: str, chars: int = 1500) -> str:
    text = text.strip()
    return text if len(text) <= chars else "..." + text[-chars:]


def _log_tail(path: Path, chars: int = 1500) -> str:
    try:
        return _tail(path.read_text(errors="replace"), chars) or "(empty)"
    except OSError:
        return "(no log)"


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- processes of a folder

def process_live(proc: psutil.Process) -> bool:
    """Running and not a zombie (a zombie holds no port, file or folder any more)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _names_folder(arg: str, folder: str) -> bool:
    """`arg` is, or sets an option to, `folder` or a path inside it."""
    return re.search(rf"(^|[=\s]){re.escape(folder)}(/|\s|$)", arg) is not None


def _in_folder(path: str, folder: str) -> bool:
    # the kernel shows a deleted working directory as "<path> (deleted)"
    path = path.removesuffix(" (deleted)")
    return path == folder or path.startswith(folder + "/")


def server_processes_in(folders: list[Path]) -> list[psutil.Process]:
    """Live database server processes (postgres, mariadbd, ...) whose working directory
    is in one of `folders` or whose arguments name one: a postmaster and its backends
    (their cwd is the data folder), mysqld (--datadir=...). Whoever started them."""
    names = [str(f) for f in folders]
    found = []
    for proc in psutil.process_iter(["name", "cmdline", "cwd", "status"]):
        info = proc.info
        if proc.pid == os.getpid() or info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if (info["name"] or "") not in SERVER_PROCESS_NAMES:
            continue
        cwd, args = info["cwd"] or "", info["cmdline"] or []
        if any(_in_folder(cwd, n) for n in names) or \
                any(_names_folder(a, n) for a in args for n in names):
            found.append(proc)
    return found


def port_listeners(port: int) -> list[str]:
    """`pid command` of whatever listens on TCP `port` (for messages)."""
    out = []
    try:
        conns = psutil.net_connections(kind="tcp")
    except psutil.Error:
        return out
    for c in conns:
        if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port:
            try:
                out.append(f"pid {c.pid} `{' '.join(psutil.Process(c.pid).cmdline())[:120]}`")
            except (psutil.Error, TypeError, ValueError):
                out.append(f"pid {c.pid}")
    return sorted(set(out))


def _wait_gone(procs: dict[int, psutil.Process], until: float) -> list[psutil.Process]:
    while True:
        left = [p for p in procs.values() if process_live(p)]
        if not left or time.monotonic() >= until:
            return left
        time.sleep(0.05)


def _signal_all(procs, sig: int) -> None:
    for p in procs:
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass


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
    """One throwaway database server process in a data folder of its own.

    What it stops is found from the data folder, never from the process the harness
    spawned: as root that process is a `runuser` wrapper, which can die (or be killed)
    while the server under it goes on listening."""

    def __init__(self, engine: str, port: int, root: Path):
        self.engine, self.port, self.root = engine, port, root
        self.proc: subprocess.Popen | None = None
        self.spawned = False
        self.endpoint: db.Endpoint | None = None
        self.stop_seconds: float | None = None    # how long the last stop() took
        self.pids_left: list[int] = []             # what the last stop() could not end
        self.log_path = root / f"{engine}.log"
        self.as_root = os.geteuid() == 0
        if engine == "postgres":
            self.data = root / "pg"
            self.pid_file = self.data / "postmaster.pid"
            self.folders = [self.data]
        else:
            # data, socket, pid and error log live in folders the server's user owns
            self.data, self.run_dir = root / "mysql", root / "mysql-run"
            self.pid_file = self.run_dir / "mysql.pid"
            self.folders = [self.data, self.run_dir]

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
        with open(self.log_path, "a") as log:
            log.write(f"--- {_now()}: starting the {self.engine} server on port {self.port}\n")
        self.spawned = True
        self.proc = LOCAL.spawn(argv, log_path=self.log_path)

    # ------------------------------------------------------------ which processes
    def main_process(self) -> psutil.Process | None:
        """The server's main process (postmaster / mysqld), from its pid file when that
        names a live server of this folder, else from the processes of the folder."""
        try:
            proc = psutil.Process(int(self.pid_file.read_text().split()[0]))
            if process_live(proc) and proc.name() in SERVER_PROCESS_NAMES and \
                    (_in_folder(proc.cwd(), str(self.data)) or
                     any(_names_folder(a, str(self.data)) for a in proc.cmdline())):
                return proc
        except (OSError, ValueError, IndexError, psutil.Error):
            pass
        # no pid file yet (starting) or a stale one: the process whose arguments name
        # the data folder (the postmaster's -D / mysqld's --datadir; backends don't)
        for proc in server_processes_in([self.data]):
            try:
                if any(_names_folder(a, str(self.data)) for a in proc.cmdline()):
                    return proc
            except psutil.Error:
                continue
        return None

    def processes(self) -> dict[int, psutil.Process]:
        """Everything of this server that is still running: the server processes of its
        folders and whatever is left of the tree the harness spawned."""
        procs = {p.pid: p for p in server_processes_in(self.folders)}
        if self.proc is not None and self.proc.poll() is None:
            try:
                spawned = psutil.Process(self.proc.pid)
                procs.update({p.pid: p for p in (spawned, *spawned.children(recursive=True))
                              if process_live(p)})
            except psutil.Error:
                pass
        return procs

    def pids(self) -> list[int]:
        """The database server's processes (postmaster and backends, or mysqld)."""
        main = self.main_process()
        if main is None:
            return []
        try:
            return [main.pid, *(c.pid for c in main.children(recursive=True))]
        except psutil.Error:
            return []

    def alive(self) -> bool:
        """The server process exists and accepts a connection within ALIVE_TIMEOUT_S."""
        return self.endpoint is not None and self.main_process() is not None and \
            db.accepts_connection(self.endpoint, ALIVE_TIMEOUT_S)

    # ------------------------------------------------------------ start
    def start(self) -> db.Endpoint:
        require_free_port(self.port, f"the local {self.engine} server")
        if self.engine == "postgres":
            self.endpoint = self._start_postgres()
        else:
            self.endpoint = self._start_mysql()
        return self.endpoint

    def _init(self, what: str, argv: list[str]) -> None:
        init = LOCAL.run(argv, timeout=INIT_TIMEOUT_S)
        output = _tail(init.stderr + init.stdout, 800)
        if init.timed_out:
            raise ProvisionError(f"{what} did not finish within {INIT_TIMEOUT_S} s "
                                 f"(stopped); its output:\n{output}")
        if init.returncode != 0:
            raise ProvisionError(f"{what} failed (exit {init.returncode}): {output}")

    def _start_postgres(self) -> db.Endpoint:
        bindir = postgres_bindir()
        self.data.mkdir()
        self._chown(self.data, "postgres")
        self._init("initdb", self._as("postgres", [
            f"{bindir}/initdb", "-D", str(self.data), "-U", BENCH_USER, "--auth=trust",
            "-E", "UTF8", "--no-sync", "--locale=C"]))
        self._spawn(self._as("postgres", [
            f"{bindir}/postgres", "-D", str(self.data), "-p", str(self.port),
            "-k", str(self.data),
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
        for folder in (self.run_dir, self.data):
            folder.mkdir()
            self._chown(folder, "mysql")
        run_as = ["--user=mysql"] if self.as_root else []
        base = ["--no-defaults", f"--datadir={self.data}"]
        if installer[0] == server:   # MySQL 8: mysqld --initialize-insecure
            cmd = [server, *base, *run_as, "--initialize-insecure"]
        else:
            cmd = [installer[0], *base, *run_as, "--auth-root-authentication-method=normal",
                   "--skip-test-db"]
        self._init(os.path.basename(cmd[0]), cmd)
        sock = self.run_dir / "mysql.sock"
        self._spawn([server, *base, *run_as, f"--socket={sock}",
                     f"--pid-file={self.pid_file}", f"--port={self.port}",
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
        ep = db.Endpoint("mysql", "127.0.0.1", self.port, BENCH_USER, BENCH_PASSWORD)
        self._wait(ep, database=None)
        return ep

    def _bootstrap_mysql(self, sock: Path) -> None:
        import pymysql
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            self._check_alive()
            try:
                conn = pymysql.connect(unix_socket=str(sock), user="root", autocommit=True,
                                       connect_timeout=5, read_timeout=60, write_timeout=60)
                break
            except pymysql.err.OperationalError:
                if time.monotonic() > deadline:
                    raise ProvisionError(
                        f"the local mysql server did not accept connections within "
                        f"{START_TIMEOUT_S} s; {self.log_path} ends with:\n"
                        f"{_log_tail(self.log_path)}") from None
                time.sleep(0.1)
        with conn:
            cur = conn.cursor()
            cur.execute(f"CREATE DATABASE IF NOT EXISTS {DATABASE_NAME}")
            cur.execute(f"CREATE USER IF NOT EXISTS '{BENCH_USER}'@'%' "
                        f"IDENTIFIED BY '{BENCH_PASSWORD}'")
            cur.execute(f"GRANT ALL ON {DATABASE_NAME}.* TO '{BENCH_USER}'@'%'")

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise ProvisionError(f"the local {self.engine} server exited "
                                 f"(code {self.proc.returncode}):\n{_log_tail(self.log_path)}")

    def _wait(self, ep: db.Endpoint, database: str | None) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            self._check_alive()
            try:
                db.connect(ep, database=database).close()
                return
            except db.ConnectError as exc:   # not accepting yet
                if time.monotonic() > deadline:
                    raise ProvisionError(
                        f"the local {self.engine} server did not accept connections within "
                        f"{START_TIMEOUT_S} s ({exc}); {self.log_path} ends with:\n"
                        f"{_log_tail(self.log_path)}") from None
                time.sleep(0.05)

    # ------------------------------------------------------------ stop
    def stop(self) -> list[str]:
        """Stop whatever is left of this server, whoever started it, and wait until no
        process of it is left and its port is free. Returns what is still wrong ([]
        when the folders can go); never raises, and is bounded (under a minute at worst)."""
        if not self.spawned:
            return []
        started = time.monotonic()
        # the server's own processes; the wrapper (runuser) is collected afterwards: it
        # exits with the server, or is stopped itself (runuser stops when its child is
        # stopped) and is then killed by _reap_wrapper
        procs = {p.pid: p for p in server_processes_in(self.folders)}
        main = self.main_process()
        if main is not None:
            procs[main.pid] = main
            # PostgreSQL: SIGINT is the "fast" shutdown, what `pg_ctl stop -m fast` sends
            # (SIGTERM would wait for the clients); MariaDB: SIGTERM is its normal one.
            _signal_all([main], signal.SIGINT if self.engine == "postgres" else signal.SIGTERM)
        else:
            # no main process: orphans of one that died (backends)
            _signal_all(procs.values(), signal.SIGTERM)
        _wait_gone(procs, time.monotonic() + STOP_TIMEOUT_S)
        # and anything of the folders that appeared meanwhile (a backend forked late)
        procs.update({p.pid: p for p in server_processes_in(self.folders)})
        left = [p for p in procs.values() if process_live(p)]
        if left:
            self._note(f"not stopped after {STOP_TIMEOUT_S} s: SIGKILL to pids "
                       f"{sorted(p.pid for p in left)}")
            _signal_all(left, signal.SIGKILL)
            _wait_gone({p.pid: p for p in left}, time.monotonic() + KILL_TIMEOUT_S)
        self._reap_wrapper()
        left = [p for p in {**procs, **self.processes()}.values() if process_live(p)]
        self.pids_left = sorted(p.pid for p in left)
        problems = []
        if left:
            problems.append(f"the local {self.engine} server's processes "
                            f"{sorted(p.pid for p in left)} survived SIGKILL")
        elif self.proc is not None and self.proc.poll() is not None:
            state.group_stopped(self.proc.pid)   # nothing of it left for a later reaper
        deadline = time.monotonic() + PORT_FREE_TIMEOUT_S
        while not LOCAL.port_is_free(self.port) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not LOCAL.port_is_free(self.port):
            problems.append(f"port {self.port} of the local {self.engine} server is still "
                            f"busy after it stopped: {', '.join(port_listeners(self.port)) or '?'}")
        self.stop_seconds = time.monotonic() - started
        self._note(f"stopped in {self.stop_seconds:.2f} s" +
                   (f"; problems: {'; '.join(problems)}" if problems else ""))
        return problems

    def _reap_wrapper(self) -> None:
        """Collect the process the harness spawned (the wrapper exits with the server);
        one that outlived the server is killed with its whole group."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            LOCAL.signal_group(self.proc.pid, signal.SIGCONT)   # a stopped wrapper can't exit
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            LOCAL.signal_group(self.proc.pid, signal.SIGKILL)
            try:
                self.proc.wait(timeout=KILL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass

    def _note(self, line: str) -> None:
        try:
            with open(self.log_path, "a") as log:
                log.write(f"--- {_now()}: harness: {line}\n")
        except OSError:
            pass

    def discard_data(self) -> None:
        """Delete the data folders, which only a stopped server may lose."""
        still = server_processes_in(self.folders)
        if still:
            raise ProvisionError(f"the local {self.engine} server's folders are still in use "
                                 f"by pids {sorted(p.pid for p in still)}; not deleting them")
        for folder in self.folders:
            shutil.rmtree(folder, ignore_errors=True)


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
        # a harness killed with SIGKILL leaves it: the next invocation removes it
        state.path_created(self.root)
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

    def server(self, engine: str) -> LocalServer:
        for s in self.servers:
            if s.engine == engine:
                return s
        raise ProvisionError(f"no local {engine} server was started by this provider")

    def pids(self, engine: str) -> list[int]:
        return [pid for s in self.servers if s.engine == engine for pid in s.pids()]

    def alive(self, engine: str) -> bool:
        return self.server(engine).alive()

    def restart(self, engine: str) -> db.Endpoint:
        """Stop whatever is left of the engine's server, then a fresh one on the same port
        with the same set-up (the table and its seed); ProvisionError when it cannot."""
        old = self.server(engine)
        problems = old.stop()
        if old.pids_left:
            raise ProvisionError(f"cannot restart the local {engine} server: "
                                 f"{'; '.join(problems)}")
        old.discard_data()
        new = LocalServer(engine, old.port, old.root)
        # registered before it starts, so that stop() also finds a half-started one
        self.servers[self.servers.index(old)] = new
        endpoint = new.start()
        db.create_schema(endpoint)
        return endpoint

    def stop(self) -> list[str]:
        """Stop every server; delete the temp folder only when no server process is left
        in it. Returns the problems ([] when clean); never raises."""
        problems = []
        for server in reversed(self.servers):
            try:
                problems += server.stop()
            except Exception as exc:  # noqa: BLE001 - the other servers still get stopped
                problems.append(f"stopping the local {server.engine} server failed: {exc}")
        self.servers.clear()
        if self.root and self.keep:
            print(f"databases: kept {self.root} (--keep-db)", file=sys.stderr, flush=True)
            state.path_removed(self.root)      # kept on purpose: no reaper removes it
        elif self.root and self.root.exists():
            left = server_processes_in([self.root])
            if left:
                problems.append(f"database processes {sorted(p.pid for p in left)} still "
                                f"use {self.root}: it is kept")
            else:
                shutil.rmtree(self.root, ignore_errors=True)
                state.path_removed(self.root)
        for problem in problems:
            print(f"databases: {problem}", file=sys.stderr, flush=True)
        return problems


# ---------------------------------------------------------------- docker compose

class DockerProvider:
    """`docker compose up -d --wait` with the repository's docker-compose.yml."""
    mode = "docker"

    def __init__(self, engines: list[str], ports: dict[str, int] | None = None,
                 keep: bool = False):
        self.engines, self.keep = engines, keep
        self.ports = {**DEFAULT_PORTS, **(ports or {})}
        self.services = {"postgres": "postgres", "mysql": "mysql"}

    def compose(self, *args: str, timeout: float = COMPOSE_TIMEOUT_S) -> Completed:
        env = {**os.environ, "BENCH_PG_PORT": str(self.ports["postgres"]),
               "BENCH_MYSQL_PORT": str(self.ports["mysql"])}
        return LOCAL.run(["docker", "compose", "-f", str(COMPOSE_FILE), *args], env=env,
                         timeout=timeout, stop_signal=signal.SIGTERM)

    def _container_logs(self, services: list[str]) -> str:
        done = self.compose("logs", "--no-color", "--tail", "30", *services, timeout=30)
        return _tail(done.stdout + done.stderr, 3000) or "(none)"

    def _check(self, done: Completed, what: str, timeout: float,
               services: list[str]) -> None:
        if not done.timed_out and done.returncode == 0:
            return
        head = (f"`docker compose {what}` did not finish within {timeout:.0f} s (stopped)"
                if done.timed_out else f"`docker compose {what}` failed (exit {done.returncode})")
        raise ProvisionError(f"{head}:\n{_tail(done.stderr + done.stdout)}\n"
                             f"container logs:\n{self._container_logs(services)}")

    def _up(self, services: list[str], *extra: str) -> None:
        # --wait-timeout bounds the wait for healthy; the process timeout also covers pulls
        args = ("up", "-d", *extra, "--wait", "--wait-timeout", str(COMPOSE_WAIT_S), *services)
        done = self.compose(*args, timeout=COMPOSE_UP_TIMEOUT_S)
        self._check(done, " ".join(args), COMPOSE_UP_TIMEOUT_S, services)

    def endpoint(self, engine: str) -> db.Endpoint:
        return db.Endpoint(engine, "127.0.0.1", self.ports[engine], BENCH_USER, BENCH_PASSWORD)

    def _prepare(self, engine: str) -> db.Endpoint:
        ep = self.endpoint(engine)
        try:
            db.wait_until_accepting(ep, timeout=ACCEPT_TIMEOUT_S)
        except TimeoutError as exc:
            raise ProvisionError(f"the {engine} container is up but {exc}; container log:\n"
                                 f"{self._container_logs([self.services[engine]])}") from None
        db.create_schema(ep)
        return ep

    def start(self) -> dict[str, db.Endpoint]:
        if not docker_engine_answers():
            raise ProvisionError("--db-mode docker: no Docker engine answers (`docker info` "
                                 "fails); use --db-mode local or external")
        for engine in self.engines:
            require_free_port(self.ports[engine], f"the {engine} container")
        self._up([self.services[e] for e in self.engines])
        return {engine: self._prepare(engine) for engine in self.engines}

    def pids(self, engine: str) -> list[int]:
        return []      # inside a container: not read (yet); recorded as not measured

    def alive(self, engine: str) -> bool:
        """The container runs and its database accepts a connection within 2 s."""
        ps = self.compose("ps", "--status", "running", "--quiet", self.services[engine],
                           timeout=15)
        if ps.timed_out or ps.returncode != 0 or not ps.stdout.strip():
            return False
        return db.accepts_connection(self.endpoint(engine), ALIVE_TIMEOUT_S)

    def restart(self, engine: str) -> db.Endpoint:
        """A fresh container for the engine (its data is tmpfs: gone with the old one),
        healthy, with the table created and filled again."""
        self._up([self.services[engine]], "--force-recreate")
        return self._prepare(engine)

    def stop(self) -> list[str]:
        if self.keep:
            return []
        args = ("down", "-v", "--timeout", "10")
        done = self.compose(*args)
        if done.timed_out or done.returncode != 0:
            problem = (f"`docker compose {' '.join(args)}` "
                       + (f"did not finish within {COMPOSE_TIMEOUT_S} s" if done.timed_out
                          else f"failed (exit {done.returncode})")
                       + f": {_tail(done.stderr + done.stdout, 500)}")
            print(f"databases: {problem}", file=sys.stderr, flush=True)
            return [problem]
        return []


# ---------------------------------------------------------------- existing databases

class ExternalProvider:
    """Existing databases given as DSNs; the harness only creates its two tables there."""
    mode = "external"

    def __init__(self, engines: list[str], dsns: dict[str, str | None],
                 wait_s: float = 10.0):
        self.engines, self.dsns, self.wait_s = engines, dsns, wait_s
        self.endpoints: dict[str, db.Endpoint] = {}

    def start(self) -> dict[str, db.Endpoint]:
        for engine in self.engines:
            dsn = self.dsns.get(engine)
            if not dsn:
                flag = "--postgres-dsn / BENCH_POSTGRES_DSN" if engine == "postgres" \
                    else "--mysql-dsn / BENCH_MYSQL_DSN"
                raise ProvisionError(f"--db-mode external needs a DSN for {engine}: {flag}")
            try:
                ep = db.endpoint_from_dsn(engine, dsn)
                db.wait_until_accepting(ep, timeout=self.wait_s)
            except (ValueError, TimeoutError) as exc:   # both messages are password-free
                raise ProvisionError(f"--db-mode external: {exc}") from None
            db.create_schema(ep)
            self.endpoints[engine] = ep
        return dict(self.endpoints)

    def pids(self, engine: str) -> list[int]:
        return []      # another machine's processes: not ours to read

    def alive(self, engine: str) -> bool:
        ep = self.endpoints.get(engine)
        return ep is not None and db.accepts_connection(ep, ALIVE_TIMEOUT_S)

    def restart(self, engine: str) -> db.Endpoint:
        ep = self.endpoints.get(engine)
        where = ep.where() if ep else engine
        raise ProvisionError(f"an external database cannot be restarted by the harness: "
                             f"{where} stopped answering; restart it and run again")

    def stop(self) -> list[str]:
        return []


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
