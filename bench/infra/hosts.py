"""Which machine runs which role: the hosts file given with `--hosts FILE`.

A small TOML file with up to three tables, one per role:

    [client]                  # the load generator (wrk / oha)
    address = "10.0.0.2"      # host name or IP address (required)
    user = "bench"            # SSH user (default: the SSH configuration's, else yours)
    port = 22                 # SSH port (default: the SSH configuration's Port, else 22)
    workdir = "~/webbench"    # where the project is copied to on that host (the default)

    [server]                  # the web server under test
    address = "10.0.0.3"

    [database]                # PostgreSQL / MariaDB
    address = "10.0.0.4"
    mode = "local"            # "local" (the harness starts them there) or "docker"

A role not named runs on the harness's machine (LocalHost). `python` (default "python3")
names the interpreter that runs the harness's small agent on that host. The file never
holds a secret: keys and known hosts come from your SSH configuration and ssh-agent.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from bench.infra.host import LOCAL
from bench.infra.seam import Host

ROLES = ("client", "server", "database")
DB_MODES = ("local", "docker")
KEYS = ("address", "user", "port", "workdir", "python")
DEFAULT_WORKDIR = "~/webbench"


class HostsError(ValueError):
    """The hosts file is missing or wrong; the message names the file and the key."""


@dataclass(frozen=True)
class HostSpec:
    role: str
    address: str
    user: str | None = None
    port: int | None = None           # None: what the SSH configuration says (else 22)
    workdir: str = DEFAULT_WORKDIR
    python: str = "python3"
    mode: str | None = None           # database only

    @property
    def label(self) -> str:
        """user@address[:port], as in the messages and the results (no port when it is
        22 or left to the SSH configuration)."""
        return self.label_with(self.port)

    def label_with(self, port: int | None) -> str:
        """The label with the port really used (known once connected)."""
        return (f"{self.user + '@' if self.user else ''}{self.address}"
                f"{'' if port in (None, 22) else f':{port}'}")

    @property
    def connection_key(self) -> tuple:
        """Roles with the same key share one connection (and one agent)."""
        return (self.address, self.port, self.user, self.workdir, self.python)


def _string(path: Path, role: str, key: str, value) -> str:
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value.strip()):
        raise HostsError(f"{path}: [{role}] {key} = {value!r}: must be a non-empty string "
                         f"without spaces")
    return value.strip()


def parse_hosts(data: dict, path: Path) -> dict[str, HostSpec]:
    """The validated roles of a decoded hosts file."""
    specs = {}
    for role, table in data.items():
        if role not in ROLES:
            what = f"unknown role [{role}]" if isinstance(table, dict) else f"'{role}' at the top level"
            raise HostsError(f"{path}: {what}: only the tables {', '.join(f'[{r}]' for r in ROLES)} "
                             f"are allowed")
        if not isinstance(table, dict):
            raise HostsError(f"{path}: '{role}' must be a table ([{role}] with address = ...)")
        allowed = KEYS + (("mode",) if role == "database" else ())
        for key in table:
            if key not in allowed:
                hint = (" (passwords and keys are never read from this file: use your SSH "
                        "configuration or ssh-agent)"
                        if any(w in key.lower() for w in ("pass", "key", "secret", "identity"))
                        else "")
                raise HostsError(f"{path}: [{role}] unknown key '{key}': allowed are "
                                 f"{', '.join(allowed)}{hint}")
        if "address" not in table:
            raise HostsError(f"{path}: [{role}] has no address: give the host name or IP "
                             f"address of the machine that runs the {role}")
        port = table.get("port")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int)
                                 or not 1 <= port <= 65535):
            raise HostsError(f"{path}: [{role}] port = {port!r}: must be an integer from 1 to 65535")
        mode = table.get("mode")
        if role == "database" and mode is not None and mode not in DB_MODES:
            raise HostsError(f"{path}: [database] mode = {mode!r}: must be one of "
                             f"{', '.join(repr(m) for m in DB_MODES)}")
        specs[role] = HostSpec(
            role=role, address=_string(path, role, "address", table["address"]),
            user=_string(path, role, "user", table["user"]) if "user" in table else None,
            port=port,
            workdir=_string(path, role, "workdir", table.get("workdir", DEFAULT_WORKDIR)),
            python=_string(path, role, "python", table.get("python", "python3")),
            mode=mode if role == "database" else None)
    return specs


class Hosts:
    """The roles' hosts. Use as a context manager: every SSH connection is opened on
    entry (an unreachable host fails at once, naming itself) and always closed on exit,
    which stops whatever was started on that host."""

    def __init__(self, specs: dict[str, HostSpec] | None = None, source: Path | None = None,
                 connect_options: dict | None = None, *, local: Host = LOCAL):
        """`local`: the host of every role the hosts file does not name (this machine; a
        FakeHost in unit tests of the orchestration)."""
        self.specs = dict(specs or {})
        self.source = source
        self.local = local
        self._options = dict(connect_options or {})
        self._hosts: dict[tuple, Host] = {}
        self.close_problems: list[str] = []

    def is_remote(self, role: str) -> bool:
        return role in self.specs

    def for_role(self, role: str) -> Host:
        """LOCAL (or the `local` given), or the RemoteHost of that role (roles on one
        machine share it)."""
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}: the roles are {', '.join(ROLES)}")
        spec = self.specs.get(role)
        if spec is None:
            return self.local
        host = self._hosts.get(spec.connection_key)
        if host is None:
            from bench.infra.remote import RemoteHost    # asyncssh only when a host is remote
            roles = [r for r in ROLES if r in self.specs
                     and self.specs[r].connection_key == spec.connection_key]
            host = self._hosts[spec.connection_key] = RemoteHost(
                spec.address, name=f"{'+'.join(roles)} ({spec.label})", user=spec.user,
                port=spec.port, workdir=spec.workdir, python=spec.python,
                connect_options=self._options)
        return host

    @property
    def database_mode(self) -> str | None:
        spec = self.specs.get("database")
        return spec.mode if spec else None

    def ssh_port(self, role: str) -> int | None:
        """The SSH port of a role's host: as the hosts file gives it, else the one its
        connection really uses (None before it is connected)."""
        spec = self.specs[role]
        host = self._hosts.get(spec.connection_key)
        return spec.port if spec.port is not None else getattr(host, "port", None)

    def topology(self) -> dict[str, str]:
        """Per role, where it ran: "local" or user@address[:port] (for the results; the
        port the connection really uses, left out when it is 22 or not known yet)."""
        return {role: self.specs[role].label_with(self.ssh_port(role))
                if role in self.specs else "local" for role in ROLES}

    def remote_hosts(self) -> list:
        """Each RemoteHost once (roles on one machine share one)."""
        hosts = {}
        for role in ROLES:
            if role in self.specs:
                host = self.for_role(role)
                hosts[id(host)] = host
        return list(hosts.values())

    def open(self) -> "Hosts":
        """Connect every remote host; on a failure close those opened and raise."""
        try:
            for host in self.remote_hosts():
                host.connect()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> list[str]:
        """Close every connection (each stops what it started); never raises. Returns
        what could not be done, one sentence per host (also kept in close_problems)."""
        for host in list(self._hosts.values()):
            try:
                problem = host.close()
            except Exception as exc:  # noqa: BLE001 - one host's failure never skips another
                problem = f"{host.name}: {exc}"
            if problem:
                self.close_problems.append(problem)
        self._hosts.clear()
        return self.close_problems

    def __enter__(self) -> "Hosts":
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()


def load_hosts(path: Path | str, **connect_options) -> Hosts:
    """The hosts file at `path`, validated (HostsError names the file and the key).
    `connect_options`: extra asyncssh.connect keywords for every host (tests give their
    own known_hosts and client key; a user's come from the SSH configuration)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise HostsError(f"{path}: no such hosts file") from None
    except OSError as exc:
        raise HostsError(f"{path}: cannot be read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise HostsError(f"{path}: not valid TOML: {exc}") from None
    return Hosts(parse_hosts(data, path), path, connect_options)


def local_hosts() -> Hosts:
    """Every role on this machine (no --hosts)."""
    return Hosts()

