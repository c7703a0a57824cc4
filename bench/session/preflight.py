"""Everything a command needs from its machines, checked before anything is provisioned or
built: the tools, the ports, a results folder it can write, the project set up on every
remote host. One message per problem, each saying how to fix it, so a command fails in a
second instead of after an hour of set-up.

What is checked depends on the command (`Needs`): `verify` sends no load, so it needs no
wrk; `build` starts nothing, so it needs no free port."""
from __future__ import annotations

import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.core.context import RunContext
from bench.core.plan import Case, databases_needed
from bench.core.protocols import DEFAULT as DEFAULT_PROTOCOL, HTTP2, \
    HTTP2_GENERATOR as H2LOAD
from bench.core.settings import NO_PROXY
from bench.infra.environment import git_state
from bench.infra.host import LOCAL
from bench.infra import limits, memory_cap
from bench.infra.hosts import Hosts
from bench.infra.proxy import available_proxies
from bench.load import LoadError, k6, oha, wrk, wsload
from bench.paths import REPO
from bench.setup.install import SCRIPTS as INSTALLED_ON_FIRST_USE, install
from bench.verify import h2spec

INSTALL = "`make setup` installs it"


@dataclass(frozen=True)
class Needs:
    """What a command uses, so what its preflight checks."""
    load_generator: bool      # wrk (the warm-up's), and each case's generator, on the client's host
    listens: bool             # servers and local databases take their ports
    writes_results: bool      # a folder under --results-dir


FOR_RUN = Needs(load_generator=True, listens=True, writes_results=True)      # run, calibrate
FOR_VERIFY = Needs(load_generator=False, listens=True, writes_results=True)
FOR_SERVE = Needs(load_generator=False, listens=True, writes_results=False)
FOR_BUILD = Needs(load_generator=False, listens=False, writes_results=False)


class PreflightError(RuntimeError):
    """Something a command needs is missing; `problems` holds one sentence each."""

    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = list(problems)


def tools_needed(context: RunContext, cases: list[Case],
                 needs: Needs = FOR_RUN) -> dict[str, str]:
    """tool -> why it is needed."""
    need = {}
    if needs.load_generator:
        need["wrk"] = "the load generator"
        oha_cases = [c for c in cases if c.load.generator == "oha"]
        if any(c.load.rate is not None for c in oha_cases):
            need["oha"] = "--rate (latency at fixed request rates)"
        elif oha_cases:
            need["oha"] = "--generator oha (the closed loop)"
        if any(c.load.generator == "k6" for c in cases):
            need["k6"] = "--generator k6"
        if any(c.load.generator == H2LOAD for c in cases):
            need["h2load"] = "--protocol h2/h2c (the HTTP/2 load generator)"
        if any(c.load.generator == "wsload" for c in cases):
            need["wsload"] = "--tests websocket (its load generator, tools/wsload)"
    if context.settings.verify and any(p in HTTP2 for p in context.settings.protocols):
        need["h2spec"] = "--protocol h2/h2c (HTTP/2 conformance, verified before any load)"
    if context.placement.pinned:
        need["taskset"] = "CPU placement (--server-cpus, --client-cpus, --db-cpus)"
    for spec in {c.variant.server.id: c.variant.server for c in cases}.values():
        for tool in spec.requires:
            need.setdefault(tool, f"the {spec.id} server")
    behind = {c.load.proxy for c in cases} - {NO_PROXY}
    if behind:
        proxies = available_proxies()
        # the proxy that terminates a protocol a server does not speak, not --behind's
        terminating = {c.load.proxy for c in cases if c.load.protocol != DEFAULT_PROTOCOL
                       and c.load.proxy not in context.settings.behind}
        for name in sorted(behind & set(proxies)):
            flag = "--tls-proxy" if name in terminating else "--behind"
            for tool in proxies[name].requires:
                need.setdefault(tool, f"{flag} {name}")
    return need


def ports_needed(context: RunContext, cases: list[Case], db_mode: str | None = None,
                 needs: Needs = FOR_RUN) -> dict[int, tuple[str, str]]:
    """port -> (the role whose host must have it free, what it is for)."""
    if not needs.listens:
        return {}
    launch, source = context.launch, context.databases
    ports = {launch.port: ("server", "--port (the servers)")}
    if any(c.load.proxy != NO_PROXY for c in cases):
        ports[launch.upstream_port] = ("server", "--port + 1 (a server behind a proxy)")
    elif any(c.load.protocol != DEFAULT_PROTOCOL for c in cases):
        ports[launch.upstream_port] = ("server", "--port + 1 (a server's HTTP/1.1 beside its "
                                                 "own listener of --protocol)")
    if (db_mode or source.db_mode) in ("local", "auto"):
        engines = databases_needed(cases)
        if "postgres" in engines:
            ports[source.pg_port] = ("database", "--pg-port (the local PostgreSQL)")
        if "mysql" in engines:
            ports[source.mysql_port] = ("database", "--mysql-port (the local MariaDB)")
    return ports


def project_problems(host, role: str) -> list[str]:
    """A remote host must have the project set up where its workdir says: the same
    install (`make setup` there) that a single machine gets."""
    python = host.project_path(sys.executable)
    done = host.run(["test", "-x", python], timeout=10)
    if done.returncode != 0:
        return [f"{host.name} ({role}): the project is not set up in "
                f"{host.project_path(REPO)} ({python} is missing): clone it there and run "
                f"`make setup` on that machine (README, \"Several machines\")"]
    return []


def short_commit(commit: str | None) -> str:
    return commit[:12] if commit else "no commit"


def code_differences(ours: dict, theirs: dict) -> list[str]:
    """What makes a remote checkout's code differ from the harness's (git_state blocks):
    another commit, or uncommitted changes the other side has not (the same diff on both
    sides is the same code)."""
    found = []
    if theirs["commit"] != ours["commit"]:
        found.append("another commit")
    if theirs["dirty"] and not ours["dirty"]:
        found.append("uncommitted changes there that the harness's checkout has not")
    elif ours["dirty"] and not theirs["dirty"]:
        found.append("uncommitted changes in the harness's checkout that it has not")
    elif theirs["dirty"] and theirs["diff_sha256"] != ours["diff_sha256"]:
        found.append("other uncommitted changes than the harness's (`git diff HEAD` differs)")
    return found


def pin_problems(host, roles: str, ours: dict) -> list[str]:
    """A remote host must run the code the harness runs: its checkout at the harness's
    commit, with the same uncommitted changes (none, or the same diff), else its samples
    would be of other code than the results say."""
    where, commit = host.project_path(REPO), short_commit(ours["commit"])
    if ours["commit"] is None:
        return [f"the harness's own folder {REPO} is not a git checkout, so whether "
                f"{host.name} ({roles}) runs the same code cannot be checked: run the "
                f"harness from a clone (README, \"Several machines\")"]
    theirs = git_state(host)
    if theirs["commit"] is None:
        return [f"{host.name} ({roles}): the project in {where} is not a git checkout "
                f"(git said: {theirs['error']}), so its code cannot be checked to be the "
                f"harness's: clone it there (`git clone <this repository> {where}`), check "
                f"out {commit} and run `make setup` on that machine (README, \"Several "
                f"machines\")"]
    differs = code_differences(ours, theirs)
    if not differs:
        return []
    changes = {True: " with changes", False: "", None: ""}
    return [f"{host.name} ({roles}) runs other code than the harness: its checkout {where} "
            f"is at {short_commit(theirs['commit'])}{changes[theirs['dirty']]}, the "
            f"harness's at {commit}{changes[ours['dirty']]} ({'; '.join(differs)}): check "
            f"out {commit} there and carry the same changes (or commit them on both), "
            f"then `make setup` there"]


def remote_problems(hosts: Hosts) -> list[str]:
    """Each remote host, once however many roles it has: the project set up there, at
    the harness's code."""
    roles_of: dict[int, tuple] = {}
    for role in ("client", "server", "database"):
        if hosts.is_remote(role):
            host = hosts.for_role(role)
            roles_of.setdefault(id(host), (host, []))[1].append(role)
    if not roles_of:
        return []
    ours, found = git_state(LOCAL), []
    for host, roles in roles_of.values():
        named = ", ".join(roles)
        missing = project_problems(host, named)
        found += missing or pin_problems(host, named, ours)
    return found


def writable(folder: Path) -> str | None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def _present(tool: str, host) -> bool:
    if tool == "h2spec":           # the set-up's, in the harness's tool folder
        try:
            return bool(h2spec.binary())
        except h2spec.H2specError:
            return False
    if tool == "k6":
        try:
            k6.require_k6(host)
        except LoadError:
            return False
        return True
    return bool(host.which(tool))


def problems(context: RunContext, cases: list[Case], hosts: Hosts | None = None,
             needs: Needs = FOR_RUN) -> list[str]:
    """Everything missing, on every host that has a role (all here without --hosts)."""
    hosts = hosts or Hosts()
    settings = context.settings
    found = []
    hints = {"wrk": wrk.INSTALL_HINT, "oha": oha.INSTALL_HINT}
    client, server = hosts.for_role("client"), hosts.for_role("server")
    for tool, why in tools_needed(context, cases, needs).items():
        # the load generators run on the client's host, everything else on the server's
        host = client if tool in ("wrk", "oha", "k6", H2LOAD, "h2spec", "wsload") else server
        if tool in INSTALLED_ON_FIRST_USE and host is LOCAL and not _present(tool, host):
            failure = install(tool)            # built lazily, on first use (bench.setup.install)
            if failure:
                found.append(f"{failure} (needed for {why})")
                continue
        if tool == "wsload":
            # built from tools/wsload now (with Go), so that a missing Go or a failed
            # build stops the run before anything starts, not at its first sample
            try:
                wsload.ensure_built(host)
            except LoadError as exc:
                found.append(f"{exc} (needed for {why})")
            continue
        if tool == "k6":
            # in the harness's tool folder (scripts/install_k6.sh), and new enough
            try:
                k6.require_k6(host)
            except LoadError as exc:
                where = f" on {host.name}" if host is not LOCAL else ""
                found.append(f"{exc}{where} (needed for {why})")
            continue
        if not _present(tool, host):
            where = f" on {host.name}" if host is not LOCAL else ""
            found.append(f"{hints.get(tool, f'{tool} is not installed (or not on PATH): {INSTALL}')}"
                         f"{where} (needed for {why})")
    found += remote_problems(hosts)
    for port, (role, what) in ports_needed(context, cases, hosts.database_mode, needs).items():
        address = context.server_address if role == "server" else \
            (hosts.specs["database"].address if hosts.is_remote("database") else "127.0.0.1")
        if not hosts.for_role(role).port_is_free(port, address):
            found.append(f"port {port} ({what}) is busy: another process listens there; stop "
                         f"it or choose another port")
    if needs.writes_results:
        why = writable(Path(settings.results_dir))
        if why:
            found.append(f"cannot write results to {settings.results_dir} ({why}): choose "
                         f"--results-dir or fix its permissions")
    caps = [("--server-memory", settings.server_memory, context.launch.server_memory_mb)]
    if any(c.load.proxy != NO_PROXY for c in cases):
        caps.append(("--proxy-memory", settings.proxy_memory, settings.proxy_memory_mb))
    for flag, text, cap_mb in caps:
        why = memory_cap.why_not(server, cap_mb) if cap_mb is not None and needs.listens \
            else None
        if why:
            found.append(f"{flag} {text} cannot be applied on {server.name}: {why} (a memory "
                         f"cap needs a writable memory cgroup: root, or a delegated cgroup "
                         f"tree)")
    if needs.load_generator and cases and not hosts.is_remote("client"):
        found += limits.problems(max(c.load.connections for c in cases))
    docker = context.databases.db_mode == "docker" or hosts.database_mode == "docker"
    if docker and databases_needed(cases):
        found += docker_problems(hosts)
    return found


def docker_problems(hosts) -> list[str]:
    """Docker mode's engine and compose, before anything starts: an engine that is
    installed but not running is named with how to start it (the engine of a [database]
    host is reached over SSH only when the databases start)."""
    from bench.infra.containers import engine
    if not LOCAL.which("docker"):
        return ["--db-mode docker needs the docker command: install Docker (Debian: "
                "docker.io), or use --db-mode local"]
    problems = []
    if not hosts.is_remote("database"):
        found = engine.engine_state()
        if not found.answers:
            problems.append(f"--db-mode docker: {found.why}")
    try:
        engine.find_compose()
    except engine.ComposeMissing as exc:
        problems.append(str(exc))
    return problems
