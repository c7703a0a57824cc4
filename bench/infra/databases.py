"""Where the databases come from: throwaway servers, Docker Compose, or existing ones.

Every provider hands back one `db.Endpoint` per engine with the contract's table
created and filled, and offers the same four calls to the run:

    start() -> {engine: Endpoint}   provide every engine (ProvisionError when it cannot)
    alive(engine) -> bool           cheap: is the database still there and answering?
    restart(engine) -> Endpoint     bring a dead database back, table filled, same port
    stop() -> list[str]             clean up what the provider started; [] when nothing
                                    of it is left, else what is (never raises)

and `pids(engine)`: the database server's processes, as pids of `provider.host`.

The throwaway servers (LocalProvider) run on any Host: this machine (LOCAL) or another
one reached over SSH (bench.infra.remote.RemoteHost), for the `database` role of a hosts
file. Every process they start or stop, every file they create or remove and every port
they check goes through that host.

Every wait is bounded and a ProvisionError says what timed out, with the log's tail.
"""
from __future__ import annotations

import glob  # noqa: F401 - the host-side steps import it themselves; tests patch it here
import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

from bench.core.dataset import DATABASE_NAME
from bench.infra import db, state
from bench.infra.host import LOCAL, Completed, LocalHost, ProcessRef
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
HOST_STEP_TIMEOUT_S = 30   # one file or process step on another host (see _on_host)
COMPOSE_WAIT_S = 180       # docker compose up --wait-timeout: containers to healthy
COMPOSE_UP_TIMEOUT_S = 900  # the whole `docker compose up`, pulling images included
COMPOSE_TIMEOUT_S = 120    # down, ps, logs
ACCEPT_TIMEOUT_S = 60      # a container's database, healthy, to accept the harness

# The names database server processes have (PostgreSQL's backends keep "postgres").
SERVER_PROCESS_NAMES = {"postgres", "postmaster", "mariadbd", "mysqld"}

# Addresses that name no host a client could connect to.
WILDCARD_ADDRESSES = {"", "*", "0.0.0.0", "::"}

# Clients on other hosts (the harness, a web server) log in to PostgreSQL with the bench
# password; on its own host the local socket and loopback stay `trust` (initdb's rules,
# which come first), as they always were.
PG_HBA_REMOTE = ("# webbench: the bench user from any other host, with its password\n"
                 f"host all {BENCH_USER} 0.0.0.0/0 scram-sha-256\n"
                 f"host all {BENCH_USER} ::/0 scram-sha-256\n")

# Run by MariaDB itself as it starts (--init-file), before it accepts connections: the
# bench user and database exist without the harness logging in as root over the socket,
# which it cannot reach when the database runs on another host.
MYSQL_BOOTSTRAP = (f"CREATE DATABASE IF NOT EXISTS {DATABASE_NAME};\n"
                   f"CREATE USER IF NOT EXISTS '{BENCH_USER}'@'%' "
                   f"IDENTIFIED BY '{BENCH_PASSWORD}';\n"
                   f"GRANT ALL ON {DATABASE_NAME}.* TO '{BENCH_USER}'@'%';\n")


class ProvisionError(RuntimeError):
    """A database could not be provided; the message says what to do."""


def require_free_port(port: int, what: str, host=LOCAL, address: str = "127.0.0.1") -> None:
    if not host.port_is_free(port, address):
        where = "" if isinstance(host, LocalHost) else f" on {host.name}"
        raise ProvisionError(f"port {port} (for {what}) is busy{where}: stop whatever listens "
                             f"there (`ss -ltnp 'sport = :{port}'` names it) or choose "
                             f"another port")


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


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# ---------------------------------------------------------------- steps on the database's host
# Everything below up to `_HOST_SIDE` runs where the database runs. The Host seam starts
# processes and reads them, but has no calls for files or for finding processes by what
# they work in; these small stdlib-only functions do that: in this process on LocalHost
# (as before), and on another host as `python3 -c <their source>` through Host.run (the
# interpreter RemoteHost's agent runs on), JSON in and out. Each reads no module global.

def _euid() -> int:
    import os
    return os.geteuid()


def _make_temp_folder(prefix: str) -> str:
    """A new folder in the host's temp folder that every user may enter (as root, the
    postgres and mysql users must reach their data folders inside it)."""
    import os
    import tempfile
    path = tempfile.mkdtemp(prefix=prefix)
    os.chmod(path, 0o755)
    return path


def _make_folder(path: str, owner: str | None) -> None:
    """A new folder (an existing one is an error), owned by `owner` when given."""
    import os
    import pwd
    os.mkdir(path)
    if owner:
        pw = pwd.getpwnam(owner)
        os.chown(path, pw.pw_uid, pw.pw_gid)


def _write_file(path: str, text: str, mode: int) -> None:
    import os
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def _append(path: str, text: str) -> None:
    with open(path, "a") as f:
        f.write(text)


def _tail_file(path: str, chars: int) -> str | None:
    """The file's last `chars` characters, None when it cannot be read."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4 * chars))
            return f.read().decode("utf-8", "replace")[-chars:]
    except OSError:
        return None


def _remove(paths: list[str]) -> list[str]:
    """Delete files and folders (gone ones are fine); returns those still there."""
    import os
    import shutil
    for path in paths:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
    return [p for p in paths if os.path.lexists(p)]


def _send_signal(pids: list[int], sig: int) -> None:
    import os
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _names_folder(arg: str, folder: str) -> bool:
    """`arg` is, or sets an option to, `folder` or a path inside it."""
    import re
    return re.search(rf"(^|[=\s]){re.escape(folder)}(/|\s|$)", arg) is not None


def _in_folder(path: str, folder: str) -> bool:
    # the kernel shows a deleted working directory as "<path> (deleted)"
    path = path.removesuffix(" (deleted)")
    return path == folder or path.startswith(folder + "/")


def _server_processes(folders: list[str], data: str, names: list[str]) -> list[list]:
    """[pid, of the data folder, its arguments name the data folder] of every live
    process called one of `names` (postgres, mariadbd, ...) whose working directory is
    in one of `folders` or whose arguments name one: a postmaster and its backends
    (their cwd is the data folder), mysqld (--datadir=...). Whoever started them."""
    import os
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        proc = "/proc/" + entry
        try:
            with open(proc + "/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
            name = stat[stat.index("(") + 1:stat.rindex(")")]
            if stat[stat.rindex(")") + 2:].split()[0] in "ZXx" or name not in names:
                continue
            with open(proc + "/cmdline", "rb") as f:
                args = [a.decode("utf-8", "replace") for a in f.read().split(b"\0") if a]
        except (OSError, ValueError, IndexError):
            continue
        try:
            cwd = os.readlink(proc + "/cwd")
        except OSError:
            cwd = ""
        names_data = any(_names_folder(a, data) for a in args)
        if names_data or any(_in_folder(cwd, f) or any(_names_folder(a, f) for a in args)
                             for f in folders):
            found.append([int(entry), names_data or _in_folder(cwd, data), names_data])
    return sorted(found)


def _survey(folders: list[str], data: str, pid_file: str, names: list[str]) -> dict:
    """The pid in the server's pid file and the server processes of its folders."""
    try:
        with open(pid_file) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pid = None
    return {"pid_file": pid, "procs": _server_processes(folders, data, names)}


def _listeners(port: int) -> list[str]:
    """`pid command` of whatever listens on TCP `port` in this network namespace."""
    import os
    sockets = set()
    for name in ("tcp", "tcp6"):
        try:
            with open("/proc/net/" + name) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            if len(f) > 9 and f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
                sockets.add("socket:[%s]" % f[9])
    out = set()
    for entry in os.listdir("/proc") if sockets else []:
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") not in sockets:
                    continue
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    command = f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
                out.add(f"pid {entry} `{command[:120]}`")
            except OSError:
                out.add(f"pid {entry}")
            break
    return sorted(out)


def _find(candidates: list[str]) -> str | None:
    import os
    import shutil
    for c in candidates:
        if os.path.isabs(c) and os.access(c, os.X_OK):
            return c
        found = shutil.which(c)
        if found:
            return found
    return None


def _postgres_bindir(override: str | None) -> list:
    """[the newest PostgreSQL server binaries' folder or None, whether `override` (the
    host's BENCH_PG_BINDIR) was given but holds no postgres]."""
    import glob
    import os
    import shutil
    if override:
        usable = os.access(os.path.join(override, "postgres"), os.X_OK)
        return [override if usable else None, not usable]
    # Debian keeps them off PATH, one folder per major version
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    for d in reversed(dirs):
        if os.access(os.path.join(d, "postgres"), os.X_OK):
            return [d, False]
    found = shutil.which("postgres")
    return [os.path.dirname(found) if found else None, False]


def _mysqld_binaries() -> list:
    """[the MariaDB/MySQL server binary or None, MariaDB's installer or None]."""
    return [_find(["mariadbd", "/usr/sbin/mariadbd", "mysqld", "/usr/sbin/mysqld"]),
            _find(["mariadb-install-db", "mysql_install_db"])]


_HOST_SIDE = [_euid, _make_temp_folder, _make_folder, _write_file, _append, _tail_file,
              _remove, _send_signal, _names_folder, _in_folder, _server_processes, _survey,
              _listeners, _find, _postgres_bindir, _mysqld_binaries]
_HOST_SOURCE = "\n\n".join(inspect.getsource(f) for f in _HOST_SIDE)


def _on_host(host, step, *args):
    """step(*args) on `host`: called here on LocalHost; elsewhere run by the host's
    Python (`host.python`, the one its agent runs on) through host.run, its arguments
    and its result passed as JSON. ProvisionError (naming the host) when it fails."""
    if isinstance(host, LocalHost):
        return step(*args)
    program = (f"import json, sys\n{_HOST_SOURCE}\n"
               f"print(json.dumps({step.__name__}(*json.loads(sys.argv[1]))))\n")
    python = getattr(host, "python", None) or "python3"
    done = host.run([python, "-c", program, json.dumps(args)], timeout=HOST_STEP_TIMEOUT_S)
    if done.timed_out or done.returncode != 0:
        what = (f"did not finish within {HOST_STEP_TIMEOUT_S} s" if done.timed_out
                else f"failed (exit {done.returncode})")
        # the step's name, not its arguments: one of them may be a file's content
        raise ProvisionError(f"{host.name}: the step `{step.__name__.lstrip('_')}` {what}: "
                             f"{_tail(done.stderr + done.stdout, 800)}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- processes, from the harness

def process_live(proc) -> bool:
    """Running and not a zombie (a zombie holds no port, file or folder any more); for a
    psutil.Process or a ProcessRef."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def find_server_processes(host, folders: list[Path]) -> list[ProcessRef]:
    """The live database server processes of `folders` on `host` (see _server_processes)."""
    names = [str(f) for f in folders]
    found = _on_host(host, _server_processes, names, names[0], sorted(SERVER_PROCESS_NAMES))
    return list(host.processes([pid for pid, *_ in found]).values())


def server_processes_in(folders: list[Path]) -> list[psutil.Process]:
    """find_server_processes on this machine, as psutil.Process."""
    return [p for p in map(_psutil_of, find_server_processes(LOCAL, folders)) if p is not None]


def _psutil_of(ref: ProcessRef) -> psutil.Process | None:
    """The psutil.Process behind a ref of LocalHost, None once it is gone."""
    try:
        proc = psutil.Process(ref.pid)
        return proc if proc.create_time() == ref.create_time else None
    except psutil.Error:
        return None


def port_listeners(port: int, host=LOCAL) -> list[str]:
    """`pid command` of whatever listens on TCP `port` of `host` (for messages)."""
    try:
        return _on_host(host, _listeners, port)
    except Exception:  # noqa: BLE001 - only ever part of another message
        return []


# ---------------------------------------------------------------- throwaway servers

def postgres_bindir(host=LOCAL) -> str:
    """The newest installed PostgreSQL server binaries on `host` (BENCH_PG_BINDIR, in
    that host's environment, chooses others)."""
    override = host.base_environment().get("BENCH_PG_BINDIR")
    bindir, unusable = _on_host(host, _postgres_bindir, override)
    if unusable:
        raise ProvisionError(f"BENCH_PG_BINDIR={override} has no postgres binary")
    if bindir is None:
        raise ProvisionError("PostgreSQL server binaries not found: install them with "
                             "`sudo apt-get install postgresql` (or set BENCH_PG_BINDIR)"
                             + ("" if isinstance(host, LocalHost) else f" on {host.name}"))
    return bindir


class LocalServer:
    """One throwaway database server process in a data folder of its own, on `host`,
    listening on `listen_address` (which its Endpoint names, for clients on other hosts).

    What it stops is found from the data folder, never from the process the harness
    spawned: as root that process is a `runuser` wrapper, which can die (or be killed)
    while the server under it goes on listening."""

    def __init__(self, engine: str, port: int, root: Path, *, host=LOCAL,
                 listen_address: str = "127.0.0.1", as_root: bool | None = None):
        self.engine, self.port, self.root = engine, port, Path(root)
        self.host, self.listen_address = host, listen_address
        self.local = isinstance(host, LocalHost)
        self.label = (f"the local {engine} server" if self.local
                      else f"the {engine} server on {host.name}")
        self.proc = None            # what host.spawn returned (Popen / RemoteProcess)
        self.spawned = False
        self.endpoint: db.Endpoint | None = None
        self.stop_seconds: float | None = None    # how long the last stop() took
        self.pids_left: list[int] = []             # what the last stop() could not end
        self._main: ProcessRef | None = None       # the main process, once found
        self.log_path = self.root / f"{engine}.log"
        self.as_root = _on_host(host, _euid) == 0 if as_root is None else as_root
        if engine == "postgres":
            self.data = self.root / "pg"
            self.pid_file = self.data / "postmaster.pid"
            self.folders = [self.data]
        else:
            # data, socket, pid and error log live in folders the server's user owns
            self.data, self.run_dir = self.root / "mysql", self.root / "mysql-run"
            self.pid_file = self.run_dir / "mysql.pid"
            self.folders = [self.data, self.run_dir]

    # PostgreSQL refuses to run as root, MariaDB should not: as root, both run as
    # their own system users (created by their Debian packages).
    def _as(self, user: str, argv: list[str]) -> list[str]:
        return ["runuser", "-u", user, "--", *argv] if self.as_root else argv

    def _make_folder(self, path: Path, user: str) -> None:
        _on_host(self.host, _make_folder, str(path), user if self.as_root else None)

    def _spawn(self, argv: list[str]) -> None:
        # own session: a Ctrl-C in the terminal reaches the harness, which then stops
        # the database in order instead of the database dying under a running server
        _on_host(self.host, _append, str(self.log_path),
                 f"--- {_now()}: starting the {self.engine} server on port {self.port}\n")
        self.spawned = True
        self.proc = self.host.spawn(argv, log_path=self.log_path)

    def _log_tail(self, chars: int = 1500) -> str:
        try:
            text = _on_host(self.host, _tail_file, str(self.log_path), chars)
        except Exception as exc:  # noqa: BLE001 - only ever part of another message
            return f"(log unreadable: {exc})"
        return "(no log)" if text is None else _tail(text, chars) or "(empty)"

    # ------------------------------------------------------------ which processes
    def _survey(self) -> tuple[ProcessRef | None, dict[int, ProcessRef]]:
        """(the main process, or None; every server process of the folders), now. The
        main one is named by the pid file when that is a live server process of the data
        folder, else (no pid file yet, or a stale one) it is the process whose arguments
        name the data folder (the postmaster's -D / mysqld's --datadir; backends don't)."""
        found = _on_host(self.host, _survey, [str(f) for f in self.folders], str(self.data),
                         str(self.pid_file), sorted(SERVER_PROCESS_NAMES))
        refs = self.host.processes([pid for pid, *_ in found["procs"]])
        of_data = [pid for pid, in_data, _ in found["procs"] if in_data]
        named = [pid for pid, _, names_data in found["procs"] if names_data]
        main_pid = found["pid_file"] if found["pid_file"] in of_data else \
            next(iter(named), None)
        main = refs.get(main_pid)
        if main is not None:
            self._main = main
        return main, refs

    def _known_main(self) -> ProcessRef | None:
        """The main process found before, while it runs (no search: what alive() and
        pids() use, the sampler calls pids() several times a second); searched for only
        while none was ever found. A main process that is gone is not replaced: a dead
        server stays dead until restart() makes a new LocalServer."""
        main = self._main if self._main is not None else self._survey()[0]
        if main is not None and self.host.running([main], zombies=False):
            return main
        return None

    def main_process(self):
        """The server's main process (postmaster / mysqld), searched for now; None when
        there is none. On LocalHost a psutil.Process (callers suspend or kill it), on
        another host its ProcessRef."""
        main = self._survey()[0]
        return _psutil_of(main) if main is not None and self.local else main

    def processes(self) -> dict[int, ProcessRef]:
        """Everything of this server that is still running: the server processes of its
        folders and whatever is left of the tree the harness spawned."""
        procs = self._survey()[1]
        if self.proc is not None and self.proc.poll() is None:
            tree = self.host.running(self.host.tree(self.proc.pid), zombies=False)
            procs.update({ref.pid: ref for ref in tree})
        return procs

    def pids(self) -> list[int]:
        """The database server's processes (postmaster and backends, or mysqld), as pids
        of its host."""
        main = self._known_main()
        if main is None:
            return []
        tree = self.host.tree(main.pid)
        return [ref.pid for ref in tree] if tree and tree[0] == main else []

    def alive(self) -> bool:
        """The server process exists and accepts a connection within ALIVE_TIMEOUT_S."""
        return self.endpoint is not None and self._known_main() is not None and \
            db.accepts_connection(self.endpoint, ALIVE_TIMEOUT_S)

    # ------------------------------------------------------------ start
    def start(self) -> db.Endpoint:
        require_free_port(self.port, self.label, self.host, self.listen_address)
        if self.engine == "postgres":
            self.endpoint = self._start_postgres()
        else:
            self.endpoint = self._start_mysql()
        self._survey()          # the main process, for alive() and pids()
        return self.endpoint

    def _init(self, what: str, argv: list[str]) -> None:
        init = self.host.run(argv, timeout=INIT_TIMEOUT_S)
        output = _tail(init.stderr + init.stdout, 800)
        if init.timed_out:
            raise ProvisionError(f"{what} did not finish within {INIT_TIMEOUT_S} s "
                                 f"(stopped); its output:\n{output}")
        if init.returncode != 0:
            raise ProvisionError(f"{what} failed (exit {init.returncode}): {output}")

    def _start_postgres(self) -> db.Endpoint:
        bindir = postgres_bindir(self.host)
        self._make_folder(self.data, "postgres")
        # the bench user's password, for clients on other hosts (PG_HBA_REMOTE); outside
        # the data folder, which initdb wants empty
        password_file = self.root / "pg-password"
        _on_host(self.host, _write_file, str(password_file), BENCH_PASSWORD + "\n", 0o644)
        try:
            self._init("initdb", self._as("postgres", [
                f"{bindir}/initdb", "-D", str(self.data), "-U", BENCH_USER, "--auth=trust",
                f"--pwfile={password_file}", "-E", "UTF8", "--no-sync", "--locale=C"]))
        finally:
            _on_host(self.host, _remove, [str(password_file)])
        _on_host(self.host, _append, str(self.data / "pg_hba.conf"), PG_HBA_REMOTE)
        self._spawn(self._as("postgres", [
            f"{bindir}/postgres", "-D", str(self.data), "-p", str(self.port),
            "-k", str(self.data),
            "-c", f"listen_addresses={self.listen_address}",
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
        ep = db.Endpoint("postgres", self.listen_address, self.port, BENCH_USER, BENCH_PASSWORD)
        self._wait(ep, database="postgres")
        with db.connect(ep, database="postgres") as conn:
            conn.execute(f"CREATE DATABASE {DATABASE_NAME}")
        with db.connect(ep) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        return ep

    def _mysqld(self) -> tuple[str, list[str]]:
        server, installer = _on_host(self.host, _mysqld_binaries)
        if not server:
            raise ProvisionError("MariaDB/MySQL server binaries not found: install them with "
                                 "`sudo apt-get install mariadb-server`"
                                 + ("" if self.local else f" on {self.host.name}"))
        return server, ([installer] if installer and "mariadb" in os.path.basename(server)
                        else [server, "--initialize-insecure"])

    def _start_mysql(self) -> db.Endpoint:
        server, installer = self._mysqld()
        for folder in (self.run_dir, self.data):
            self._make_folder(folder, "mysql")
        run_as = ["--user=mysql"] if self.as_root else []
        base = ["--no-defaults", f"--datadir={self.data}"]
        if installer[0] == server:   # MySQL 8: mysqld --initialize-insecure
            cmd = [server, *base, *run_as, "--initialize-insecure"]
        else:
            cmd = [installer[0], *base, *run_as, "--auth-root-authentication-method=normal",
                   "--skip-test-db"]
        self._init(os.path.basename(cmd[0]), cmd)
        init_file = self.run_dir / "bootstrap.sql"
        _on_host(self.host, _write_file, str(init_file), MYSQL_BOOTSTRAP, 0o644)
        self._spawn([server, *base, *run_as, f"--socket={self.run_dir / 'mysql.sock'}",
                     f"--pid-file={self.pid_file}", f"--port={self.port}",
                     f"--bind-address={self.listen_address}", "--skip-name-resolve",
                     f"--init-file={init_file}",
                     f"--max-connections={MAX_CONNECTIONS}",
                     # the contract stores DATETIME in UTC; NOW() must agree
                     "--default-time-zone=+00:00",
                     # same reason as synchronous_commit=off on PostgreSQL
                     "--innodb-flush-log-at-trx-commit=2",
                     "--innodb-buffer-pool-size=256M"])
        ep = db.Endpoint("mysql", self.listen_address, self.port, BENCH_USER, BENCH_PASSWORD)
        self._wait(ep, database=None)
        return ep

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise ProvisionError(f"{self.label} exited (code {self.proc.returncode}):\n"
                                 f"{self._log_tail()}")

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
                        f"{self.label} did not accept connections within "
                        f"{START_TIMEOUT_S} s ({exc}); {self.log_path} ends with:\n"
                        f"{self._log_tail()}") from None
                time.sleep(0.05)

    # ------------------------------------------------------------ stop
    def _signal(self, refs, sig: int) -> None:
        """`sig` to each of these processes that still runs."""
        live = self.host.running(list(refs), zombies=False)
        if live:
            _on_host(self.host, _send_signal, [ref.pid for ref in live], int(sig))

    def _wait_gone(self, refs, seconds: float) -> list[ProcessRef]:
        refs, deadline = list(refs), time.monotonic() + seconds
        while True:
            left = self.host.running(refs, zombies=False)
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.05)

    def _port_free(self) -> bool:
        return self.host.port_is_free(self.port, self.listen_address)

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
        main, procs = self._survey()
        if main is not None:
            # PostgreSQL: SIGINT is the "fast" shutdown, what `pg_ctl stop -m fast` sends
            # (SIGTERM would wait for the clients); MariaDB: SIGTERM is its normal one.
            self._signal([main], signal.SIGINT if self.engine == "postgres" else signal.SIGTERM)
        else:
            # no main process: orphans of one that died (backends)
            self._signal(procs.values(), signal.SIGTERM)
        self._wait_gone(procs.values(), STOP_TIMEOUT_S)
        # and anything of the folders that appeared meanwhile (a backend forked late)
        procs.update(self._survey()[1])
        left = self.host.running(procs.values(), zombies=False)
        if left:
            self._note(f"not stopped after {STOP_TIMEOUT_S} s: SIGKILL to pids "
                       f"{sorted(ref.pid for ref in left)}")
            for ref in left:
                self.host.kill(ref)
            self._wait_gone(left, KILL_TIMEOUT_S)
        self._reap_wrapper()
        left = self.host.running({**procs, **self.processes()}.values(), zombies=False)
        self.pids_left = sorted(ref.pid for ref in left)
        problems = []
        if left:
            problems.append(f"{self.label}'s processes {self.pids_left} survived SIGKILL")
        elif self.local and self.proc is not None and self.proc.poll() is not None:
            state.group_stopped(self.proc.pid)   # nothing of it left for a later reaper
        deadline = time.monotonic() + PORT_FREE_TIMEOUT_S
        while not self._port_free() and time.monotonic() < deadline:
            time.sleep(0.05)
        if not self._port_free():
            listeners = port_listeners(self.port, self.host)
            problems.append(f"port {self.port} of {self.label} is still busy after it "
                            f"stopped: {', '.join(listeners) or '?'}")
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
            self.host.signal_group(self.proc.pid, signal.SIGCONT)   # a stopped wrapper can't exit
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.host.signal_group(self.proc.pid, signal.SIGKILL)
            try:
                self.proc.wait(timeout=KILL_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass

    def _note(self, line: str) -> None:
        try:
            _on_host(self.host, _append, str(self.log_path), f"--- {_now()}: harness: {line}\n")
        except Exception:  # noqa: BLE001 - a note is not worth failing a stop for
            pass

    def discard_data(self) -> None:
        """Delete the data folders, which only a stopped server may lose."""
        still = self._survey()[1]
        if still:
            raise ProvisionError(f"{self.label}'s folders are still in use by pids "
                                 f"{sorted(still)}; not deleting them")
        _on_host(self.host, _remove, [str(f) for f in self.folders])


class LocalProvider:
    """Throwaway PostgreSQL / MariaDB servers in a temp folder of `host` (this machine by
    default), listening on `listen_address`, which their Endpoints name: on another host
    that is the address clients on other hosts reach it at (not a wildcard)."""
    mode = "local"

    def __init__(self, engines: list[str], ports: dict[str, int] | None = None,
                 keep: bool = False, *, host=LOCAL, listen_address: str = "127.0.0.1"):
        if listen_address.strip() in WILDCARD_ADDRESSES:
            raise ProvisionError(f"listen address {listen_address!r} names no host: give the "
                                 f"one address clients connect to (the Endpoints carry it)")
        self.engines, self.ports, self.keep = engines, {**DEFAULT_PORTS, **(ports or {})}, keep
        self.host, self.listen_address = host, listen_address
        self.local = isinstance(host, LocalHost)
        self.servers: list[LocalServer] = []
        self.root: Path | None = None
        self._as_root: bool | None = None

    def _server(self, engine: str, port: int) -> LocalServer:
        return LocalServer(engine, port, self.root, host=self.host,
                           listen_address=self.listen_address, as_root=self._as_root)

    def start(self) -> dict[str, db.Endpoint]:
        # the host's /tmp, not the clone: as root the postgres user must be able to reach it
        self.root = Path(_on_host(self.host, _make_temp_folder, "webbench-db-"))
        if self.local:
            # a harness killed with SIGKILL leaves it: the next invocation removes it
            # (on another host, RemoteHost's agent stops the servers when the harness's
            # connection ends, but nothing removes the folder)
            state.path_created(self.root)
        self._as_root = _on_host(self.host, _euid) == 0
        endpoints = {}
        try:
            for engine in self.engines:
                server = self._server(engine, self.ports[engine])
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
        """The engine's server processes, as pids of `self.host`."""
        return [pid for s in self.servers if s.engine == engine for pid in s.pids()]

    def alive(self, engine: str) -> bool:
        return self.server(engine).alive()

    def restart(self, engine: str) -> db.Endpoint:
        """Stop whatever is left of the engine's server, then a fresh one on the same port
        with the same set-up (the table and its seed); ProvisionError when it cannot."""
        old = self.server(engine)
        problems = old.stop()
        if old.pids_left:
            raise ProvisionError(f"cannot restart {old.label}: {'; '.join(problems)}")
        old.discard_data()
        new = self._server(engine, old.port)
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
                problems.append(f"stopping {server.label} failed: {exc}")
        self.servers.clear()
        where = "" if self.local else f"{self.host.name}:"
        if self.root and self.keep:
            print(f"databases: kept {where}{self.root} (--keep-db)", file=sys.stderr, flush=True)
            if self.local:
                state.path_removed(self.root)      # kept on purpose: no reaper removes it
        elif self.root:
            try:
                left = find_server_processes(self.host, [self.root])
                if left:
                    problems.append(f"database processes {sorted(r.pid for r in left)} still "
                                    f"use {where}{self.root}: it is kept")
                elif _on_host(self.host, _remove, [str(self.root)]):
                    problems.append(f"{where}{self.root} could not be deleted")
                elif self.local:
                    state.path_removed(self.root)
            except Exception as exc:  # noqa: BLE001 - stop never raises
                problems.append(f"cleaning up {where}{self.root} failed: {exc}")
        for problem in problems:
            print(f"databases: {problem}", file=sys.stderr, flush=True)
        return problems


# ---------------------------------------------------------------- docker compose

class DockerProvider:
    """`docker compose up -d --wait` with the repository's docker-compose.yml, on this
    machine's Docker engine or, for a [database] host, on that machine's through Docker's
    own SSH transport (DOCKER_HOST=ssh://user@host: the compose file and the images stay
    where they are; docker runs the containers there)."""
    mode = "docker"
    host = LOCAL        # the containers' processes are not the harness's to read

    def __init__(self, engines: list[str], ports: dict[str, int] | None = None,
                 keep: bool = False, docker_host: str | None = None,
                 listen_address: str = "127.0.0.1"):
        self.engines, self.keep = engines, keep
        self.ports = {**DEFAULT_PORTS, **(ports or {})}
        self.services = {"postgres": "postgres", "mysql": "mysql"}
        self.docker_host, self.listen_address = docker_host, listen_address

    def compose_env(self) -> dict[str, str]:
        env = {**os.environ, "BENCH_PG_PORT": str(self.ports["postgres"]),
               "BENCH_MYSQL_PORT": str(self.ports["mysql"]),
               # the containers' ports are published on this address of their machine
               "BENCH_DB_BIND": self.listen_address}
        if self.docker_host:
            env["DOCKER_HOST"] = self.docker_host
        return env

    def compose(self, *args: str, timeout: float = COMPOSE_TIMEOUT_S) -> Completed:
        return LOCAL.run(["docker", "compose", "-f", str(COMPOSE_FILE), *args],
                         env=self.compose_env(), timeout=timeout, stop_signal=signal.SIGTERM)

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
        return db.Endpoint(engine, self.listen_address, self.ports[engine], BENCH_USER,
                           BENCH_PASSWORD)

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
    host = LOCAL

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
             dsns: dict[str, str | None] | None = None, keep: bool = False,
             host=LOCAL, listen_address: str = "127.0.0.1"):
    """The provider for a --db-mode. `host` runs the throwaway servers of "local" (and
    "auto" means "local" there: Docker is only looked for on this machine);
    `listen_address`: theirs, and their Endpoints' host."""
    remote = not isinstance(host, LocalHost)
    mode = "local" if remote and mode == "auto" else choose_mode(mode)
    if mode == "local":
        return LocalProvider(engines, ports, keep, host=host, listen_address=listen_address)
    if mode == "docker":
        if remote:
            return DockerProvider(engines, ports, keep, docker_host=docker_transport(host),
                                  listen_address=listen_address)
        return DockerProvider(engines, ports, keep)
    if mode == "external":
        return ExternalProvider(engines, dsns or {})
    raise ProvisionError(f"unknown --db-mode {mode!r}: choose auto, local, docker or external")


def docker_transport(host) -> str:
    """Docker's SSH address of a remote host (its keys come from the user's SSH set-up,
    as the harness's own connection's do)."""
    user = f"{host.user}@" if getattr(host, "user", None) else ""
    port = f":{host.port}" if getattr(host, "port", 22) not in (None, 22) else ""
    return f"ssh://{user}{host.address}{port}"


def for_settings(settings, engines: list[str], *, host=LOCAL,
                 listen_address: str = "127.0.0.1", mode: str | None = None):
    """The provider a run's settings ask for (one place that maps flags to a provider);
    `host` and `listen_address` as in provider(); `mode`: the hosts file's [database]
    mode, which wins over --db-mode for that host."""
    return provider(mode or settings.db_mode, engines,
                    ports={"postgres": settings.pg_port, "mysql": settings.mysql_port},
                    dsns={"postgres": settings.postgres_dsn, "mysql": settings.mysql_dsn},
                    keep=settings.keep_db, host=host, listen_address=listen_address)
