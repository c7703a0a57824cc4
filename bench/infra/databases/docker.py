"""Databases in containers: `docker compose up -d --wait` with the repository's
docker-compose.yml (the `--db-mode docker` of the command line), in the images
bench.infra.containers.images chooses (official, or built here from the operating
system's packages), as one compose project per harness (`webbench-<pid>`), recorded in
the harness's state file so that a harness killed with SIGKILL leaves nothing behind
(bench.infra.state.reap removes it)."""
from __future__ import annotations

import os
import signal
import sys

from bench.infra import db, state
from bench.infra.containers import cgroup, images
from bench.infra.containers import engine as docker_engine
from bench.infra.databases.common import (ALIVE_TIMEOUT_S, BENCH_PASSWORD, BENCH_USER,
                                          DEFAULT_PORTS, ProvisionError, require_free_port,
                                          tail)
from bench.infra.host import LOCAL
from bench.infra.seam import Completed, Host
from bench.paths import REPO

COMPOSE_FILE = REPO / "docker-compose.yml"
COMPOSE_WAIT_S = 180       # docker compose up --wait-timeout: containers to healthy
COMPOSE_UP_TIMEOUT_S = 900  # the whole `docker compose up`, pulling images included
COMPOSE_TIMEOUT_S = 120    # down, ps, logs
ACCEPT_TIMEOUT_S = 60      # a container's database, healthy, to accept the harness
DOWN = ("down", "-v", "--remove-orphans", "--timeout", "10")


def docker_engine_answers() -> bool:
    """A Docker engine answers on this machine."""
    return docker_engine.engine_answers()


def docker_transport(host: Host) -> str:
    """Docker's SSH address of a remote host (its keys, and its port when the hosts file
    names none, come from the user's SSH set-up, as the harness's own connection's do)."""
    user = f"{host.user}@" if getattr(host, "user", None) else ""
    port = f":{host.port}" if getattr(host, "port", None) not in (None, 22) else ""
    return f"ssh://{user}{host.address}{port}"


class DockerProvider:
    """`docker compose up -d --wait` with the repository's docker-compose.yml, on this
    machine's Docker engine or, for a [database] host, on that machine's through Docker's
    own SSH transport (DOCKER_HOST=ssh://user@host: the compose file and the images stay
    where they are; docker runs the containers there)."""
    mode = "docker"
    host = LOCAL        # the containers' processes are not the harness's to read
    # the run measures the database from /proc rather than moving its processes into a
    # cgroup of the harness's: that would take them out of the container's
    cgroups_kept = ("docker mode: the container's processes stay in the cgroups its engine "
                    "made; read from /proc")

    def __init__(self, engines: list[str], ports: dict[str, int] | None = None,
                 keep: bool = False, docker_host: str | None = None,
                 listen_address: str = "127.0.0.1", image_source: str | None = None,
                 project: str | None = None, on_step=lambda text: None):
        """`image_source`: auto, official or local (None: BENCH_DB_IMAGES, else auto);
        `project`: the compose project (None: COMPOSE_PROJECT_NAME, else
        webbench-<this pid>)."""
        self.engines, self.keep = engines, keep
        self.ports = {**DEFAULT_PORTS, **(ports or {})}
        self.services = {"postgres": "postgres", "mysql": "mysql"}
        self.docker_host, self.listen_address = docker_host, listen_address
        self.image_source = image_source or os.environ.get("BENCH_DB_IMAGES") or "auto"
        self.project = (project or os.environ.get("COMPOSE_PROJECT_NAME")
                        or f"webbench-{os.getpid()}")
        self.on_step = on_step
        self.images: images.ImageChoice | None = None
        self._compose: docker_engine.Compose | None = None
        self._containers: dict[str, str] = {}      # engine -> its container's id
        self.engine_version: str | None = None

    def docker_env(self) -> dict[str, str]:
        return {"DOCKER_HOST": self.docker_host} if self.docker_host else {}

    def compose_env(self) -> dict[str, str]:
        env = {**os.environ, "BENCH_PG_PORT": str(self.ports["postgres"]),
               "BENCH_MYSQL_PORT": str(self.ports["mysql"]),
               # the databases listen on this address of their machine (host network)
               "BENCH_DB_BIND": self.listen_address, "COMPOSE_PROJECT_NAME": self.project,
               **self.docker_env()}
        if self.images is not None:
            env.update(self.images.compose_env())
        return env

    def compose_argv(self, *args: str) -> list[str]:
        if self._compose is None:
            try:
                self._compose = docker_engine.find_compose()
            except docker_engine.ComposeMissing as exc:
                raise ProvisionError(str(exc)) from None
        files = [COMPOSE_FILE, *(self.images.compose_files() if self.images else [])]
        return [*self._compose.command, "-p", self.project,
                *[a for f in files for a in ("-f", str(f))], *args]

    def compose(self, *args: str, timeout: float = COMPOSE_TIMEOUT_S) -> Completed:
        return LOCAL.run(self.compose_argv(*args), env=self.compose_env(), timeout=timeout,
                         stop_signal=signal.SIGTERM)

    def _container_logs(self, services: list[str]) -> str:
        done = self.compose("logs", "--no-color", "--tail", "30", *services, timeout=30)
        return tail(done.stdout + done.stderr, 3000) or "(none)"

    def _require_engine(self) -> None:
        """ProvisionError saying why, and what to do, when the engine does not answer."""
        found = docker_engine.engine_state({**os.environ, **self.docker_env()})
        if not found.answers:
            raise ProvisionError(f"--db-mode docker: {found.why}")
        self.engine_version = found.server_version

    def _check(self, done: Completed, what: str, timeout: float,
               services: list[str]) -> None:
        if not done.timed_out and done.returncode == 0:
            return
        self._require_engine()          # an engine that stopped answering says so first
        head = (f"`docker compose {what}` did not finish within {timeout:.0f} s (stopped)"
                if done.timed_out else f"`docker compose {what}` failed (exit {done.returncode})")
        raise ProvisionError(f"{head}:\n{tail(done.stderr + done.stdout)}\n"
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
        self._require_engine()
        for name in self.engines:
            require_free_port(self.ports[name], f"the {name} container")
        self.compose_argv()                      # compose v2 is here, before any build
        try:
            self.images = images.choose(self.engines, self.image_source,
                                        {**os.environ, **self.docker_env()}, self.on_step)
        except images.ImageError as exc:
            raise ProvisionError(str(exc)) from None
        # recorded before `up`: a harness killed during it leaves a project to remove
        state.project_started(self.project, self.compose_argv(*DOWN),
                              {k: v for k, v in self.compose_env().items()
                               if k.startswith(("BENCH_", "DOCKER_", "COMPOSE_"))})
        self._up([self.services[e] for e in self.engines])
        return {name: self._prepare(name) for name in self.engines}

    def describe(self, engine_name: str) -> dict:
        """What a result records of the database's container: its image (name, id,
        registry digest, where it came from) and the engine's and compose's versions."""
        if self.images is None:
            return {}
        image = images.describe(self.images.names[engine_name], self.docker_env())
        return {"image": {**image, "source": self.images.source,
                          "built_here": self.images.source == "local"},
                "docker": {"engine": self.engine_version,
                           "compose": self._compose.version if self._compose else None}}

    def container(self, engine_name: str) -> str | None:
        if engine_name not in self._containers:
            ps = self.compose("ps", "--quiet", self.services[engine_name], timeout=15)
            ids = ps.stdout.split() if ps.returncode == 0 and not ps.timed_out else []
            if not ids:
                return None
            self._containers[engine_name] = ids[0]
        return self._containers[engine_name]

    def pids(self, engine_name: str) -> list[int]:
        """The container's processes on this machine (its cgroup, and its shim); none for
        an engine on another machine, whose figures are then "not measured"."""
        if self.docker_host:
            return []
        container = self.container(engine_name)
        if not container:
            return []
        return cgroup.container_pids(container)

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
        self._containers.pop(engine, None)
        self._up([self.services[engine]], "--force-recreate")
        return self._prepare(engine)

    def stop(self) -> list[str]:
        if self.keep:
            state.project_removed(self.project)     # kept on purpose: not a leftover
            return []
        if self.images is None and self._compose is None:
            return []                              # nothing was started
        args = DOWN
        done = self.compose(*args)
        if done.timed_out or done.returncode != 0:
            problem = (f"`docker compose {' '.join(args)}` "
                       + (f"did not finish within {COMPOSE_TIMEOUT_S} s" if done.timed_out
                          else f"failed (exit {done.returncode})")
                       + f": {tail(done.stderr + done.stdout, 500)}")
            found = docker_engine.engine_state({**os.environ, **self.docker_env()})
            if not found.answers:
                problem += (f" ({found.why}); its containers are on record: the next "
                            f"run_bench.py invocation removes them once the engine answers")
            print(f"databases: {problem}", file=sys.stderr, flush=True)
            return [problem]
        state.project_removed(self.project)
        return []
