"""The Docker engine and compose, on this machine.

Compose: the harness speaks compose v2 (`up --wait`, `ps --status`), found as the docker
CLI's plugin (`docker compose`, what Docker's own packages install) or as a standalone
v2 binary (`docker-compose`: the harness's tool folder first, where
scripts/install_docker-compose.sh builds it from its Go module, then PATH). Debian's
docker-compose 1.29 (v1, Python, end of life since 2023) has no `up --wait`: it is named
as too old, never half-used.

The engine: `engine_state()` tells "answers", "installed but not running" (with how to
start it) and "not installed" apart, so a docker-mode run refuses before anything starts
with the right advice. The test suite starts an engine when none answers and stops only
what it started (scripts/docker_engine.sh); it starts it with `--iptables=false`, so the
FORWARD policy Docker would set to DROP never cuts the network-namespace hosts of the
several-hosts tests (the databases run on the host's network, which needs no NAT rule).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from bench.infra.host import LOCAL
from bench.paths import CACHE_DIR

TOOLS = CACHE_DIR / "bin"                 # scripts/install_docker-compose.sh's output folder
COMPOSE_MINIMUM = (2, 20)                 # `up --wait-timeout` and `ps --status` as used
INFO_TIMEOUT_S = 20
DOCKERD_PATHS = ("/usr/sbin/dockerd", "/usr/bin/dockerd")
START_ADVICE = ("start it: `sudo systemctl start docker` where systemd runs it, or "
                "`sudo dockerd --iptables=false &`; or use --db-mode local")


@dataclass(frozen=True)
class EngineState:
    answers: bool
    why: str = ""                 # when it does not answer: why, and what to do
    server_version: str | None = None
    client_version: str | None = None
    cgroup_version: str | None = None


def dockerd() -> str | None:
    return LOCAL.which("dockerd") or next((p for p in DOCKERD_PATHS if os.path.exists(p)),
                                          None)


def engine_state(env: dict | None = None) -> EngineState:
    """Whether a Docker engine answers `docker` here (or at DOCKER_HOST in `env`)."""
    if not LOCAL.which("docker"):
        return EngineState(False, "the docker command is not installed (Debian: the "
                                  "docker.io package; `make test-all`'s set-up installs it)")
    try:
        done = LOCAL.run(["docker", "version", "--format", "{{json .}}"],
                         timeout=INFO_TIMEOUT_S, env=env)
    except OSError as exc:
        return EngineState(False, f"`docker version` cannot run: {exc}")
    try:
        info = json.loads(done.stdout or "{}")
    except ValueError:
        info = {}
    client = (info.get("Client") or {}).get("Version")
    server = info.get("Server") or {}
    if done.returncode == 0 and not done.timed_out and server.get("Version"):
        return EngineState(True, "", server.get("Version"), client,
                           _cgroup_version(env))
    said = (done.stderr or "").strip().splitlines()
    said = said[-1] if said else ("no answer within "
                                  f"{INFO_TIMEOUT_S} s" if done.timed_out else "no answer")
    if (env or os.environ).get("DOCKER_HOST"):
        return EngineState(False, f"the Docker engine at DOCKER_HOST does not answer "
                                  f"({said})", None, client)
    if dockerd():
        return EngineState(False, f"the Docker engine is installed but does not answer "
                                  f"({said}): {START_ADVICE}", None, client)
    return EngineState(False, f"only the docker client is installed, no engine ({said}): "
                              f"install one (Debian: docker.io)", None, client)


def _cgroup_version(env) -> str | None:
    done = LOCAL.run(["docker", "info", "--format", "{{.CgroupVersion}}"],
                     timeout=INFO_TIMEOUT_S, env=env)
    return (done.stdout.strip() or None) if done.returncode == 0 else None


def engine_answers() -> bool:
    return engine_state().answers


# ------------------------------------------------------------------ compose
@dataclass(frozen=True)
class Compose:
    command: tuple[str, ...]      # ("docker", "compose") or (path to docker-compose,)
    version: str                  # "2.40.3"


class ComposeMissing(RuntimeError):
    pass


def _version_of(argv: list[str]) -> str | None:
    try:
        done = LOCAL.run([*argv, "version", "--short"], timeout=INFO_TIMEOUT_S)
    except OSError:
        return None
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", done.stdout) if done.returncode == 0 else None
    return found.group(0) if found else None


def _new_enough(version: str) -> bool:
    return tuple(int(x) for x in version.split(".")[:2]) >= COMPOSE_MINIMUM


def find_compose() -> Compose:
    """The first compose v2 found: docker's plugin, the tool folder's, PATH's."""
    tried = []
    candidates = [["docker", "compose"]] if LOCAL.which("docker") else []
    candidates += [[str(p)] for p in (TOOLS / "docker-compose",) if p.exists()]
    if LOCAL.which("docker-compose"):
        candidates.append([LOCAL.which("docker-compose")])
    for argv in candidates:
        version = _version_of(argv)
        if version and _new_enough(version):
            return Compose(tuple(argv), version)
        tried.append(f"`{' '.join(argv)}`: " + (f"version {version}, older than "
                                                 f"{'.'.join(map(str, COMPOSE_MINIMUM))}"
                                                 if version else "not compose v2"))
    raise ComposeMissing(
        "--db-mode docker needs Docker Compose v2 (>= "
        f"{'.'.join(map(str, COMPOSE_MINIMUM))}): "
        + ("; ".join(tried) if tried else "none found")
        + ". `bash scripts/install_docker-compose.sh` builds it from its Go module into "
        f"{TOOLS}, or install Docker's compose plugin")
