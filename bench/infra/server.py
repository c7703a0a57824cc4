"""A server's life: build it, start it from its manifest, wait until it is the server we
asked for with all its workers, list its processes, stop its whole process group."""
from __future__ import annotations

import contextlib
import fcntl
import re
import signal
import sys
import time
from pathlib import Path

from bench.core import counting, manifest
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra import envs, static_files
from bench.infra.db import Endpoint
from bench.infra.environment import build_env
from bench.infra.host import LOCAL
from bench.infra.memory_cap import CapUnavailable, MemoryCap
from bench.infra.process_group import ProcessGroup
from bench.infra.resources import MemoryReading, memory_now
from bench.infra.seam import Host, HttpUnanswered, ProcessRef, TransferError


class ServerError(RuntimeError):
    """The server could not be built or started; the message carries its log's tail.

    `reason` is one line for the tables: what happened and the log's last line."""

    def __init__(self, what: str, log_path: Path | None = None):
        tail = log_tail(log_path) if log_path else ""
        super().__init__(what + (f"; last lines of its log:\n{tail}" if tail else ""))
        last = next((line.strip() for line in reversed(tail.splitlines()) if line.strip()), "")
        self.reason = what + (f" (log: {last[:200]})" if last else "")


def log_tail(path: Path | None, lines: int = 25) -> str:
    if path is None:
        return "(see the output above)"
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def db_budget(spec: manifest.ServerSpec, settings: Settings,
              database: str) -> manifest.DbBudget | None:
    """The exact split of the DB budget (BudgetError if there is none); None without a
    database, where no pool is opened and any budget will do."""
    if database == "none":
        return None
    return spec.budget(settings.db_connections, settings.workers)


def pool_size(spec: manifest.ServerSpec, settings: Settings, database: str) -> int:
    budget = db_budget(spec, settings, database)
    return budget.per_process if budget else 1


def server_workers(spec: manifest.ServerSpec, settings: Settings, host: Host = LOCAL) -> int:
    """W as this server runs on `host` (ServerSpec.workers_for): the CPUs it may use are
    its pinned CPUs, else the host's usable CPUs, asked of the host (a round trip to a
    remote one) only for a server whose count depends on them."""
    if spec.workers_for(settings.workers, settings.runtime_threads, 1) == settings.workers:
        return settings.workers         # W whatever the CPUs: nothing to ask
    pinned = settings.cpus("server")
    cpus = len(pinned) if pinned else int(host.machine().get("cpus_usable") or 1)
    return spec.workers_for(settings.workers, settings.runtime_threads, cpus)


def template_values(spec: manifest.ServerSpec, settings: Settings, database: str,
                    host: Host = LOCAL, workers: int | None = None) -> dict:
    """The manifest's placeholders, as paths on the host that runs the server (the project
    is at the same place in its workdir); `workers` if already known (server_workers)."""
    where = envs.location(spec, host)      # its own virtualenv, a --dep's copy of it
    return {
        "python": where.python or host.project_path(sys.executable),
        # its own environment's root (a virtualenv, a --dep's copy), "" when it has none
        "env": where.env_root or "",
        "dir": where.dir or host.project_path(spec.dir),
        "servers_dir": host.project_path(spec.dir.parent),
        "cache_dir": where.cache_dir or (str(spec.cache_dir) if spec.cache_dir
                                         else host.cache_dir()),
        "host": settings.host, "port": str(settings.port),
        "workers": str(workers or server_workers(spec, settings, host)), "db": database,
        "pool_size": str(pool_size(spec, settings, database)),
    }


BUILD_TIMEOUT_S = 1800     # a cold Rust build with fat LTO takes minutes on 2 cores, never this


def needs_build(spec) -> bool:
    """A build step to run: the manifest's build command, or an environment of its own
    to make (bench.infra.envs)."""
    return bool(spec.build) or envs.needed(spec)


def build(spec: manifest.ServerSpec, settings: Settings, log_path: Path,
          host: Host = LOCAL) -> float:
    """Make the server's own environment if it has one (cached by content), then run the
    manifest's build command once; returns seconds taken."""
    try:
        seconds = envs.prepare(spec, host, log_path,
                               lambda name, folder: _build_lock(name, folder, host))
    except envs.EnvError as exc:
        raise ServerError(f"environment of {spec.label}: {exc}", exc.log) from exc
    if not spec.build:
        return seconds
    values = template_values(spec, settings, "none", host)
    return seconds + run_build(spec.id, [manifest.expand(a, values) for a in spec.build],
                               Path(envs.location(spec, host).dir or spec.dir),
                               values["cache_dir"], log_path, host)


def run_build(name: str, argv: list[str], folder: Path, cache_dir: str, log_path: Path,
              host: Host = LOCAL) -> float:
    """A build command (expanded already) run once in `folder` on `host`, its output
    appended to `log_path`; seconds taken. ServerError when it cannot run, fails or
    times out. Servers' manifests and proxies' proxy.toml (bench.infra.proxy) both build
    through it."""
    if not host.remote:
        Path(cache_dir).mkdir(parents=True, exist_ok=True)
    # a build on another machine gets the harness's build settings given through the
    # environment (a user's CARGO_PROFILE_RELEASE_*), which SSH does not carry: the
    # run records them once (environment.build_env) for every host it builds on
    env = {**host.base_environment(), **build_env().get("build_env", {})} \
        if host.remote else None
    try:
        with _build_lock(name, cache_dir, host):
            done = host.run(argv, cwd=host.project_path(folder), timeout=BUILD_TIMEOUT_S,
                            stop_signal=signal.SIGTERM, env=env)
    except FileNotFoundError as exc:
        raise ServerError(f"build of {name} failed: {exc.filename} is not installed "
                          f"(`make setup` installs the toolchains)") from exc
    with open(log_path, "a") as log:
        log.write(f"$ {' '.join(argv)}\n{done.stdout}{done.stderr}")
    if done.timed_out:
        raise ServerError(f"build of {name} did not finish within {BUILD_TIMEOUT_S} s", log_path)
    if done.returncode != 0:
        raise ServerError(f"build of {name} failed (exit {done.returncode})", log_path)
    return done.wall_s


BUILD_LOCK_WAIT_S = BUILD_TIMEOUT_S   # for another build of it, or its servers to stop


def _lock_path(name: str, cache_dir: str) -> Path:
    folder = Path(cache_dir) / "locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"build-{name}.lock"


@contextlib.contextmanager
def _build_lock(name: str, cache_dir: str, host: Host):
    """A build of a server excludes, on this machine, another build of it and any
    running server of it (which holds the lock shared: `in_use`): the test suite's
    parallel workers or two runs that need the same server wait, then find the build
    up to date, instead of an `npm ci` emptying node_modules under a starting server
    (fastify: "Cannot find module 'find-my-way'")."""
    if host.remote:
        yield
        return
    with open(_lock_path(name, cache_dir), "w") as lock:
        deadline = time.monotonic() + BUILD_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ServerError(f"build of {name} waited {BUILD_LOCK_WAIT_S} s for "
                                      f"another build of it, or its running servers, to end")
                time.sleep(0.2)
        yield


@contextlib.contextmanager
def in_use(spec: manifest.ServerSpec, settings: Settings, host: Host = LOCAL):
    """Held while a server of `spec` runs from its build: a build of it waits meanwhile."""
    if host.remote or not spec.build:
        yield
        return
    cache_dir = template_values(spec, settings, "none", host)["cache_dir"]
    with open(_lock_path(spec.id, cache_dir), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH)
        yield


# Workers of a multi-process server start in parallel after the first one answers
# /ping/; a few seconds covers every server here (they take well under one). Past it,
# readiness stops waiting for a census that does not reach W (the workers check says so).
WORKERS_SETTLE_S = 5.0
PING_POLL_S = 0.01         # between two GET /ping/ while a server starts


class ServerProcess:
    """One started server (a process group). Use as a context manager: always stopped."""

    def __init__(self, variant: Variant, settings: Settings, endpoint: Endpoint | None,
                 log_path: Path | None, host: Host = LOCAL):
        """`log_path` None: the server writes to this terminal (the `serve` command)."""
        self.variant, self.settings, self.endpoint, self.log_path = \
            variant, settings, endpoint, log_path
        self.host = host
        self.spec = variant.server
        self.group: ProcessGroup | None = None     # once started
        # start-up and memory, what a sample's "cost to run" is made of: seconds from the
        # spawn to the first /ping/ that answered as this server, and the server tree's
        # memory once ready, before anyone sent it a request (bench.infra.resources)
        self.spawned_at: float | None = None
        self.ping_s: float | None = None
        self.idle_memory: MemoryReading | None = None
        # --server-memory: this start's capped cgroup (bench.infra.memory_cap); the sample
        # reads it before the stop (bench.runner.measure), the stop removes it
        self.memory_cap: MemoryCap | None = None
        # the case's own endpoint (path, headers), asked right after /ping/ answered: the
        # start-up to its first correct answer (a pool or a template made on first use
        # shows here, not at /ping/); None: not asked (a request that writes, or none)
        self.first_request: tuple[str, dict] | None = None
        self.first_answer_s: float | None = None
        # W processes, or the threads a threads-scheduling runtime is given
        self.workers = server_workers(self.spec, settings, host)
        self.budget = db_budget(self.spec, settings, variant.database)
        self.pool_size = pool_size(self.spec, settings, variant.database)
        # the environment asking for its own listeners of other protocols than HTTP/1.1
        # (bench.infra.native), set before start()
        self.listeners: dict[str, str] = {}
        # what went wrong without costing the sample (a log that could not be fetched):
        # the run adds these to its sample's warnings
        self.warnings: list[str] = []
        # a count (bench.runner.count): the counter it starts under (its wrap() and
        # environment(), bench.infra.counters) with the manifest's [instructions] env
        self.counter = None
        # --compression's cases: started with its response compression on
        self.compression = False
        # on another machine the server logs there, and the log is fetched after the stop
        self.host_log = None if (log_path is None or not host.remote) else \
            host.path(f"remote-logs/{log_path.name}")

    @property
    def proc(self):
        """The group's leader (what the host's spawn returned), None before start()."""
        return self.group.proc if self.group is not None else None

    @property
    def base_url(self) -> str:
        return f"http://{self.settings.host}:{self.settings.port}"

    def environment(self) -> dict[str, str]:
        values = template_values(self.spec, self.settings, self.variant.database, self.host,
                                 self.workers)
        env = {**self.host.base_environment(),
               "BENCH_SERVER_ID": self.spec.id,
               "BENCH_HOST": self.settings.host, "BENCH_PORT": str(self.settings.port),
               "BENCH_WORKERS": str(self.workers), "BENCH_TOKEN": self.settings.token,
               "BENCH_DB": self.variant.database, "BENCH_ORM": "1" if self.variant.orm else "0",
               "BENCH_DB_POOL_SIZE": str(self.pool_size),
               "BENCH_DB_POOL_TOTAL": str(self.settings.db_connections),
               "PYTHONUNBUFFERED": "1"}
        # the static test's files (servers/README.md, "The HTTP workloads"); a host they
        # cannot be copied to serves no /static/, and the static test's verification
        # fails there with this warning beside it
        try:
            env["BENCH_STATIC_DIR"] = static_files.folder_on(self.host)
        except TransferError as exc:
            self.warnings.append(f"no BENCH_STATIC_DIR on {self.host.name}: {exc}")
        if self.endpoint is not None:
            env.update(self.endpoint.server_env())
        env.update(self.listeners)       # its own TLS / h2c listeners (bench.infra.native)
        # on for a compressed case only, whatever the harness's own environment holds
        env.pop("BENCH_COMPRESSION", None)
        if self.compression:
            env["BENCH_COMPRESSION"] = "1"
        env.update({k: manifest.expand(v, values) for k, v in self.spec.env.items()})
        if self.counter is not None:
            env.update(counting.RUNTIME_ENV.get(self.spec.language, {}))
            env.update({k: manifest.expand(v, values) for k, v in self.spec.count.env.items()})
            env.update(self.counter.environment(env))
        return env

    def command(self) -> list[str]:
        values = template_values(self.spec, self.settings, self.variant.database, self.host,
                                 self.workers)
        # a counted start may have a command of its own ([instructions] start)
        start = (self.spec.count.start if self.counter is not None and self.spec.count.start
                 else self.spec.start)
        return [manifest.expand(a, values) for a in start]

    def start(self) -> None:
        if not self.host.port_is_free(self.settings.port, self.settings.host):
            raise ServerError(f"port {self.settings.port} is busy before starting {self.spec.id}: "
                              f"another process listens there (choose --port or stop it)")
        try:
            # own process group: stop() can reach every worker the server forks
            # in its folder, or a --dep's copy of it (its own node_modules)
            folder = envs.location(self.spec, self.host).dir or \
                self.host.project_path(self.spec.dir)
            argv = self.command()
            if self.counter is not None:
                argv = self.counter.wrap(argv)
            cap_mb = getattr(self.settings, "server_memory_mb", None)
            if cap_mb is not None:
                try:
                    self.memory_cap = MemoryCap.open(self.host, "server", cap_mb)
                except CapUnavailable as exc:
                    raise ServerError(f"cannot cap {self.spec.id}'s memory at {cap_mb:g} MiB "
                                      f"on {self.host.name}: {exc}") from None
                argv = self.memory_cap.argv(argv)
            self.spawned_at = time.monotonic()
            self.group = ProcessGroup.start(
                self.host, argv, cwd=folder,
                env=self.environment(), log_path=self.host_log or self.log_path,
                cpus=self.settings.cpus("server"))
        except FileNotFoundError as exc:
            if self.memory_cap is not None:
                self.memory_cap.close()
            raise ServerError(f"cannot start {self.spec.id}: {exc.filename} not found "
                              f"(was it built? `make setup` builds every server)") from exc

    def alive(self) -> bool:
        return self.group is not None and self.group.alive()

    def wait_ready(self, timeout: float | None = None,
                   settle_s: float = WORKERS_SETTLE_S) -> float:
        """Until GET /ping/ answers as *this* server (a stray process on the port never
        counts) and its worker census shows all W workers; returns seconds.

        /ping/ alone is not enough: one worker (or the master) answers it while the
        others are still being forked or still carry their parent's name, and a sample
        that began then saw a worker "appear". The census is polled until it shows W,
        for at most `settle_s` (bounded by the manifest's ready_timeout) after /ping/
        answered; a server that never shows W is returned as ready all the same, so
        that verification's workers check reports the count it found.

        Then the tree's memory is read once (`idle_memory`): what the server holds started
        and ready, before verification or load sends it anything."""
        timeout = timeout or self.spec.ready_timeout * getattr(self.counter, "slowdown", 1)
        start = time.monotonic()
        self._wait_ping(start, timeout)
        if self.spawned_at is not None:
            self.ping_s = time.monotonic() - self.spawned_at
            if self.first_request is not None:
                self._wait_first_answer(start + timeout)
        self._wait_workers(time.monotonic() + min(settle_s, timeout))
        waited = time.monotonic() - start
        self.idle_memory = memory_now(self.host, self.pids())
        return waited

    def _wait_ping(self, start: float, timeout: float) -> None:
        expected = {"server": self.spec.id, "database": self.variant.database,
                    "orm": self.variant.orm}
        last = "no answer"
        while time.monotonic() - start < timeout:
            self._raise_if_exited()
            try:
                answer = self.host.http_get(f"{self.base_url}/ping/", timeout=1)
                body = answer.json() if answer.status == 200 else None
                if body == expected:
                    return
                last = f"HTTP {answer.status} {answer.text[:200]!r}"
            except HttpUnanswered as exc:
                last = exc.reason
            except ValueError as exc:
                last = type(exc).__name__
            # the start-up figure's resolution; a refused connection costs microseconds
            time.sleep(PING_POLL_S)
        self.fetch_log()
        raise ServerError(f"{self.spec.id} was not ready after {timeout:.0f}s (GET /ping/ must "
                          f"answer {expected}; last: {last})", self.log_path)

    def _wait_first_answer(self, deadline: float) -> None:
        """Until the case's endpoint answers 200: its time from the spawn. A 5xx or no
        answer is a server still warming up (asked again); a 4xx is a request it will
        never answer so (left to verification, no figure)."""
        path, headers = self.first_request
        while time.monotonic() < deadline:
            self._raise_if_exited()
            try:
                answer = self.host.http_get(f"{self.base_url}{path}", timeout=1,
                                            headers=headers)
            except HttpUnanswered:
                answer = None
            if answer is not None and answer.status == 200:
                self.first_answer_s = time.monotonic() - self.spawned_at
                return
            if answer is not None and 400 <= answer.status < 500:
                return
            time.sleep(PING_POLL_S)

    def _wait_workers(self, deadline: float) -> None:
        """Until the census shows W workers, or `deadline` (then the count is left to
        the workers check); at once for workers that cannot be counted."""
        want = self.workers
        while True:
            self._raise_if_exited()
            seen, _ = self.worker_census()
            if seen is None or seen == want or time.monotonic() >= deadline:
                return
            time.sleep(0.02)

    def _raise_if_exited(self) -> None:
        if not self.alive():
            self.fetch_log()
            raise ServerError(f"{self.spec.id} exited with code {self.proc.returncode} "
                              f"before it was ready{self._killed_for_memory()}", self.log_path)

    def exit_reason(self) -> str:
        """Why a server that died while it served is gone: its exit code, and the OOM
        killer when its memory cap made the kernel kill it."""
        return f"server exited during the run (code {self.proc.returncode})" \
               f"{self._killed_for_memory()}"

    def _killed_for_memory(self) -> str:
        why = self.memory_cap.oom_reason() if self.memory_cap is not None else None
        return f": {why}" if why else ""

    def worker_census(self) -> tuple[int | None, str]:
        """(workers seen now, what was counted) as the manifest's [workers] table
        describes them; None when the manifest says they cannot be counted from outside."""
        check = self.spec.worker_check
        if check.count == "processes":
            workers = self.worker_processes()
            return len(workers), \
                f"worker processes (pids {', '.join(str(p.pid) for p in workers)})"
        if check.count == "threads":
            return len(self.worker_threads()), f"worker threads named /{check.match}/"
        return None, check.reason

    def worker_processes(self) -> list[ProcessRef]:
        """The tree's worker processes as the manifest's [workers] table describes them
        (for a server whose workers are processes)."""
        check = self.spec.worker_check
        pattern = re.compile(check.match or ".")

        def texts(proc):
            return self.host.environment(proc) if check.match_in == "environment" \
                else [self.host.command_line(proc)]
        return [p for p in self.group.tree()[1:] if any(pattern.search(t) for t in texts(p))]

    def worker_threads(self) -> list[str]:
        """The names of the tree's worker threads (for a server whose workers are threads)."""
        pattern = re.compile(self.spec.worker_check.match or ".")
        return [n for p in self.group.tree() for n in self.host.thread_names(p.pid)
                if pattern.search(n)]

    def pids(self) -> list[int]:
        """Every process of the server's tree running now (for the resource sampler)."""
        return [p.pid for p in self.group.members()] if self.alive() else []

    def stop(self, grace: float = 5.0) -> float:
        """The manifest's stop signal (SIGTERM) to the process group, SIGKILL to what is
        left after `grace`; returns seconds."""
        if self.group is None:
            return 0.0
        start = time.monotonic()
        try:
            self.group.stop(getattr(signal, self.spec.stop_signal), grace)
        finally:
            if self.memory_cap is not None:
                self.memory_cap.close()
        self._wait_port_free()
        self.fetch_log()
        return time.monotonic() - start

    def fetch_log(self) -> None:
        """The server's log from the machine that ran it, into the run's folder. One that
        cannot be fetched (a TransferError: the host still answers) is a warning, kept in
        `warnings` and noted in the local log; it never costs the sample."""
        if self.host_log is None:
            return
        try:
            self.host.get(self.host_log, self.log_path)
        except Exception as exc:  # noqa: BLE001 - TransferError; a lost host says so elsewhere
            warning = f"the server's log on {self.host.name} could not be fetched: {exc}"
            if warning not in self.warnings:
                self.warnings.append(warning)
            with open(self.log_path, "a") as log:
                log.write(f"({warning})\n")

    def _wait_port_free(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.host.port_is_free(self.settings.port, self.settings.host) and time.monotonic() < deadline:
            time.sleep(0.05)

    def __enter__(self) -> "ServerProcess":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
