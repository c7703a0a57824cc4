"""Throwaway database servers: started by the harness from the binaries installed on a
host (this machine, or another one reached over SSH for the `database` role of a hosts
file), in a temp folder of that host, and deleted after the run. The `--db-mode local`
of the command line (local to the database's host).

Every process they start or stop, every file they create or remove and every port they
check goes through that host. What differs between PostgreSQL and MariaDB is the
engine's (postgres.py, mariadb.py); every wait is bounded, and a ProvisionError says
what timed out, with the log's tail.
"""
from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

from bench.infra import db, state
from bench.infra.databases.common import (ALIVE_TIMEOUT_S, BENCH_PASSWORD, BENCH_USER,
                                          DEFAULT_PORTS, SERVER_PROCESS_NAMES,
                                          WILDCARD_ADDRESSES, ProvisionError,
                                          find_server_processes, now, port_listeners,
                                          psutil_of, require_free_port, step, tail)
from bench.infra.databases.mariadb import MariaDB
from bench.infra.databases.postgres import Postgres
from bench.infra.host import LOCAL
from bench.infra.process_group import ProcessGroup
from bench.infra.seam import Host, ProcessRef

ENGINES = {"postgres": Postgres(), "mysql": MariaDB()}

INIT_TIMEOUT_S = 120       # initdb / mariadb-install-db
START_TIMEOUT_S = 60       # a server from its start to accepting connections
STOP_TIMEOUT_S = 20        # fast shutdown (PostgreSQL) / SIGTERM (MariaDB) before SIGKILL
KILL_TIMEOUT_S = 10        # after SIGKILL, for the kernel to take the processes away
PORT_FREE_TIMEOUT_S = 10   # for the port to be free once the processes are gone
WRAPPER_GRACE_S = 2        # for the spawned wrapper (runuser) to exit with the server


class ThrowawayServer:
    """One throwaway database server process in a data folder of its own, on `host`,
    listening on `listen_address` (which its Endpoint names, for clients on other hosts).

    What it stops is found from the data folder, never from the process the harness
    spawned: as root that process is a `runuser` wrapper, which can die (or be killed)
    while the server under it goes on listening."""

    def __init__(self, engine: str, port: int, root: Path, *, host: Host = LOCAL,
                 listen_address: str = "127.0.0.1", as_root: bool | None = None):
        self.engine, self.port, self.root = engine, port, Path(root)
        self.kind = ENGINES[engine]
        self.host, self.listen_address = host, listen_address
        self.label = (f"the local {engine} server" if not host.remote
                      else f"the {engine} server on {host.name}")
        self.group: ProcessGroup | None = None    # what the harness spawned
        self.spawned = False
        self.endpoint: db.Endpoint | None = None
        self.stop_seconds: float | None = None    # how long the last stop() took
        self.pids_left: list[int] = []             # what the last stop() could not end
        self._main: ProcessRef | None = None       # the main process, once found
        self.log_path = self.root / f"{engine}.log"
        self.as_root = step(host, "euid") == 0 if as_root is None else as_root
        self.data, self.pid_file, self.folders = self.kind.layout(self.root)

    @property
    def proc(self):
        """What host.spawn returned (Popen / RemoteProcess), None before the start."""
        return self.group.proc if self.group is not None else None

    # ------------------------------------------------------------ what the engines use
    def as_user(self, user: str, argv: list[str]) -> list[str]:
        """PostgreSQL refuses to run as root, MariaDB should not: as root, both run as
        their own system users (created by their Debian packages)."""
        return ["runuser", "-u", user, "--", *argv] if self.as_root else argv

    def make_folder(self, path: Path, user: str) -> None:
        step(self.host, "make_folder", path=str(path), owner=user if self.as_root else None)

    def init(self, what: str, argv: list[str]) -> None:
        """Run an initialisation command to completion, bounded by INIT_TIMEOUT_S."""
        init = self.host.run(argv, timeout=INIT_TIMEOUT_S)
        output = tail(init.stderr + init.stdout, 800)
        if init.timed_out:
            raise ProvisionError(f"{what} did not finish within {INIT_TIMEOUT_S} s "
                                 f"(stopped); its output:\n{output}")
        if init.returncode != 0:
            raise ProvisionError(f"{what} failed (exit {init.returncode}): {output}")

    def _log_tail(self, chars: int = 1500) -> str:
        try:
            text = step(self.host, "tail_file", path=str(self.log_path), chars=chars)
        except Exception as exc:  # noqa: BLE001 - only ever part of another message
            return f"(log unreadable: {exc})"
        return "(no log)" if text is None else tail(text, chars) or "(empty)"

    # ------------------------------------------------------------ which processes
    def _survey(self) -> tuple[ProcessRef | None, dict[int, ProcessRef]]:
        """(the main process, or None; every server process of the folders), now. The
        main one is named by the pid file when that is a live server process of the data
        folder, else (no pid file yet, or a stale one) it is the process whose arguments
        name the data folder (the postmaster's -D / mysqld's --datadir; backends don't)."""
        found = step(self.host, "survey", folders=[str(f) for f in self.folders],
                     data=str(self.data), pid_file=str(self.pid_file),
                     names=sorted(SERVER_PROCESS_NAMES))
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
        server stays dead until restart() makes a new ThrowawayServer."""
        main = self._main if self._main is not None else self._survey()[0]
        if main is not None and self.host.running([main], zombies=False):
            return main
        return None

    def main_process(self):
        """The server's main process (postmaster / mysqld), searched for now; None when
        there is none. On this machine a psutil.Process (callers suspend or kill it), on
        another host its ProcessRef."""
        main = self._survey()[0]
        return psutil_of(main) if main is not None and not self.host.remote else main

    def processes(self) -> dict[int, ProcessRef]:
        """Everything of this server that is still running: the server processes of its
        folders and whatever is left of the tree the harness spawned."""
        procs = self._survey()[1]
        if self.group is not None and self.group.alive():
            procs.update({ref.pid: ref for ref in self.group.members(zombies=False)})
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
        argv = self.kind.prepare(self)
        # own session: a Ctrl-C in the terminal reaches the harness, which then stops
        # the database in order instead of the database dying under a running server
        step(self.host, "append", path=str(self.log_path),
             text=f"--- {now()}: starting the {self.engine} server on port {self.port}\n")
        self.spawned = True
        self.group = ProcessGroup.start(self.host, argv, log_path=self.log_path)
        ep = db.Endpoint(self.engine, self.listen_address, self.port, BENCH_USER, BENCH_PASSWORD)
        self._wait(ep, database=self.kind.ready_database)
        self.kind.after_start(ep)
        self.endpoint = ep
        self._survey()          # the main process, for alive() and pids()
        return self.endpoint

    def _check_alive(self) -> None:
        if self.group is not None and not self.group.alive():
            raise ProvisionError(f"{self.label} exited (code {self.group.returncode}):\n"
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
            step(self.host, "send_signal", pids=[ref.pid for ref in live], sig=int(sig))

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
        # stopped) and is then continued or killed with its group
        main, procs = self._survey()
        if main is not None:
            self._signal([main], self.kind.stop_signal)
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
        if self.group is not None:
            # a stopped wrapper can't exit: SIGCONT to its group; one that outlives the
            # server is killed with its whole group, and the group is forgotten once
            # nothing of it is left
            self.group.stop(signal.SIGCONT, WRAPPER_GRACE_S)
        left = self.host.running({**procs, **self.processes()}.values(), zombies=False)
        self.pids_left = sorted(ref.pid for ref in left)
        problems = []
        if left:
            problems.append(f"{self.label}'s processes {self.pids_left} survived SIGKILL")
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

    def _note(self, line: str) -> None:
        try:
            step(self.host, "append", path=str(self.log_path),
                 text=f"--- {now()}: harness: {line}\n")
        except Exception:  # noqa: BLE001 - a note is not worth failing a stop for
            pass

    def discard_data(self) -> None:
        """Delete the data folders, which only a stopped server may lose."""
        still = self._survey()[1]
        if still:
            raise ProvisionError(f"{self.label}'s folders are still in use by pids "
                                 f"{sorted(still)}; not deleting them")
        step(self.host, "remove", paths=[str(f) for f in self.folders])


class ThrowawayProvider:
    """Throwaway PostgreSQL / MariaDB servers in a temp folder of `host` (this machine by
    default), listening on `listen_address`, which their Endpoints name: on another host
    that is the address clients on other hosts reach it at (not a wildcard)."""
    mode = "local"          # the --db-mode that asks for it: local to the database's host

    def __init__(self, engines: list[str], ports: dict[str, int] | None = None,
                 keep: bool = False, *, host: Host = LOCAL, listen_address: str = "127.0.0.1"):
        if listen_address.strip() in WILDCARD_ADDRESSES:
            raise ProvisionError(f"listen address {listen_address!r} names no host: give the "
                                 f"one address clients connect to (the Endpoints carry it)")
        self.engines, self.ports, self.keep = engines, {**DEFAULT_PORTS, **(ports or {})}, keep
        self.host, self.listen_address = host, listen_address
        self.servers: list[ThrowawayServer] = []
        self.root: Path | None = None
        self._as_root: bool | None = None

    def _server(self, engine: str, port: int) -> ThrowawayServer:
        return ThrowawayServer(engine, port, self.root, host=self.host,
                               listen_address=self.listen_address, as_root=self._as_root)

    def start(self) -> dict[str, db.Endpoint]:
        # the host's /tmp, not the clone: as root the postgres user must be able to reach it
        self.root = Path(step(self.host, "make_temp_folder", prefix="webbench-db-"))
        if not self.host.remote:
            # a harness killed with SIGKILL leaves it: the next invocation removes it
            # (on another host, RemoteHost's agent stops the servers when the harness's
            # connection ends, but nothing removes the folder)
            state.path_created(self.root)
        self._as_root = step(self.host, "euid") == 0
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

    def server(self, engine: str) -> ThrowawayServer:
        for s in self.servers:
            if s.engine == engine:
                return s
        raise ProvisionError(f"no throwaway {engine} server was started by this provider")

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
        where = f"{self.host.name}:" if self.host.remote else ""
        if self.root and self.keep:
            print(f"databases: kept {where}{self.root} (--keep-db)", file=sys.stderr, flush=True)
            if not self.host.remote:
                state.path_removed(self.root)      # kept on purpose: no reaper removes it
        elif self.root:
            try:
                left = find_server_processes(self.host, [self.root])
                if left:
                    problems.append(f"database processes {sorted(r.pid for r in left)} still "
                                    f"use {where}{self.root}: it is kept")
                elif step(self.host, "remove", paths=[str(self.root)]):
                    problems.append(f"{where}{self.root} could not be deleted")
                elif not self.host.remote:
                    state.path_removed(self.root)
            except Exception as exc:  # noqa: BLE001 - stop never raises
                problems.append(f"cleaning up {where}{self.root} failed: {exc}")
        for problem in problems:
            print(f"databases: {problem}", file=sys.stderr, flush=True)
        return problems
