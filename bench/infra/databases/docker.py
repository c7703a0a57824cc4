"""Databases in containers: `docker compose up -d --wait` with the repository's
docker-compose.yml (the `--db-mode docker` of the command line)."""
from __future__ import annotations

import os
import signal
import sys

from bench.infra import db
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


def docker_engine_answers() -> bool:
    """A Docker engine answers `docker info` on this machine."""
    if not LOCAL.which("docker"):
        return False
    try:
        done = LOCAL.run(["docker", "info"], timeout=10)
    except OSError:
        return False
    return done.returncode == 0 and not done.timed_out


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
        return tail(done.stdout + done.stderr, 3000) or "(none)"

    def _check(self, done: Completed, what: str, timeout: float,
               services: list[str]) -> None:
        if not done.timed_out and done.returncode == 0:
            return
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
                       + f": {tail(done.stderr + done.stdout, 500)}")
            print(f"databases: {problem}", file=sys.stderr, flush=True)
            return [problem]
        return []
