"""A throwaway network of SSH hosts on this one machine, for testing RemoteHost.

Each role gets a network namespace (`wbtb-client`, `wbtb-server`, `wbtb-db`) with its own
address on a veth pair to a bridge in the root namespace (10.213.87.0/24, the bridge is
.1, the namespaces .2, .3, ...), its loopback up, and its own sshd listening on its
address (port 22) with a generated host key, accepting one generated client key for root
(PermitRootLogin prohibit-password). The harness, in the root namespace, reaches them
like remote machines; the namespaces share this machine's filesystem, so a test can
check from outside what a host did.

    with TestBed() as bed:                       # or the `netns_testbed` pytest fixture
        host = bed.remote_host("server")
        ...

Teardown kills every process in each namespace (`ip netns pids`), deletes the
namespaces, the bridge and the temporary folder, also after a failure. A test bed killed
before its teardown is found stale by the next one (its lock in /run is free again) and
removed first; namespaces of the same names that no test bed recorded are never touched.
WB_TESTBED_PREFIX and WB_TESTBED_SUBNET (three octets) choose other names and addresses.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

SSHD = "/usr/sbin/sshd"
PREFIX = os.environ.get("WB_TESTBED_PREFIX", "wbtb")
SUBNET = os.environ.get("WB_TESTBED_SUBNET", "10.213.87")
ROLES = ("client", "server", "db")
SSH_PORT = 22
READY_TIMEOUT_S = 10.0


class NamespacesUnavailable(RuntimeError):
    """This kernel or container does not let us create a network namespace."""


class TestBedError(RuntimeError):
    """The test bed could not be set up or torn down; the message says what."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=15)
    except FileNotFoundError:
        raise TestBedError("the `ip` command (iproute2) is not installed") from None
    if check and done.returncode != 0:
        raise TestBedError(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")
    return done


def probe_namespaces(prefix: str = PREFIX) -> None:
    """Raise NamespacesUnavailable (with the kernel's reason) unless a network namespace
    can be created here; the probe is deleted at once."""
    name = f"{prefix}-probe{os.getpid()}"[:40]
    done = ip("netns", "add", name, check=False)
    if done.returncode != 0:
        raise NamespacesUnavailable(done.stderr.strip() or f"ip netns add exited {done.returncode}")
    ip("netns", "del", name, check=False)


def namespace_pids(netns: str) -> list[int]:
    done = ip("netns", "pids", netns, check=False)
    return [int(p) for p in done.stdout.split()] if done.returncode == 0 else []


def _comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
        return int(data[data.rindex(")") + 2:].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def _using(tmp: str) -> list[int]:
    """Processes whose command line names the test bed's temp folder (its sshds)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                if tmp.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@dataclass
class Node:
    """One namespace: a "machine" with an address and an sshd."""
    role: str
    netns: str
    address: str
    veth_root: str
    veth_ns: str
    port: int = SSH_PORT
    sshd: subprocess.Popen | None = field(default=None, repr=False)

    def net_inode(self) -> int:
        """The namespace's inode, as /proc/<pid>/ns/net of its processes names it."""
        return os.stat(f"/run/netns/{self.netns}").st_ino

    def pids(self) -> list[int]:
        return namespace_pids(self.netns)

    def sshd_pids(self) -> list[int]:
        return [p for p in self.pids() if _comm(p) == "sshd"]

    def others(self) -> list[int]:
        """Processes in the namespace other than sshd: whatever a test started there."""
        return [p for p in self.pids() if _comm(p) not in ("sshd", None)]

    def kill_sshd(self) -> None:
        """SIGKILL to the listening sshd and to every session it forked: to a client,
        the host is gone mid-session."""
        for pid in self.sshd_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.sshd is not None:
            try:
                self.sshd.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


class TestBed:
    """Namespaces with an sshd each; a context manager (see the module's docstring)."""

    __test__ = False                    # not a pytest test class

    def __init__(self, roles: tuple[str, ...] = ROLES, prefix: str = PREFIX, subnet: str = SUBNET):
        if len(roles) > 200:
            raise ValueError("at most 200 roles in one /24")
        self.prefix, self.subnet = prefix, subnet
        self.bridge = f"{prefix}-br"
        self.nodes = {
            role: Node(role, f"{prefix}-{role}", f"{subnet}.{i + 2}",
                       veth_root=f"{prefix}-{role[:4]}{i}r", veth_ns=f"{prefix}-{role[:4]}{i}n")
            for i, role in enumerate(roles)}
        for name in [self.bridge] + [n.veth_root for n in self.nodes.values()]:
            if len(name) > 15:
                raise ValueError(f"interface name {name!r} is longer than 15 characters: "
                                 f"choose a shorter WB_TESTBED_PREFIX")
        self.lock_path = Path(f"/run/{prefix}-testbed.lock")
        self._lock_fd: int | None = None
        self.tmp: Path | None = None

    # ------------------------------------------------------------ files
    @property
    def client_key(self) -> Path:
        return self.tmp / "client_key"

    @property
    def known_hosts(self) -> Path:
        return self.tmp / "known_hosts"

    def connect_options(self) -> dict:
        """asyncssh.connect keywords that use only this test bed's key and known_hosts,
        never the user's SSH configuration or agent."""
        return {"known_hosts": str(self.known_hosts), "client_keys": [str(self.client_key)],
                "agent_path": None, "config": []}

    def remote_host(self, role: str, **kwargs):
        """A RemoteHost for a node (as root, workdir in the test bed's temp folder)."""
        from bench.infra.remote import RemoteHost
        node = self.nodes[role]
        kwargs.setdefault("workdir", str(self.tmp / "work" / role))
        return RemoteHost(node.address, name=f"{role} ({node.address})", user="root",
                          port=node.port, connect_options=self.connect_options(), **kwargs)

    def hosts_file(self, roles: dict[str, str]) -> Path:
        """A hosts file mapping harness roles to nodes, e.g. {"server": "server"}."""
        lines = []
        for role, node_role in roles.items():
            node = self.nodes[node_role]
            lines += [f"[{role}]", f'address = "{node.address}"', 'user = "root"',
                      f"port = {node.port}", f'workdir = "{self.tmp / "work" / node_role}"', ""]
        path = self.tmp / "hosts.toml"
        path.write_text("\n".join(lines))
        return path

    # ------------------------------------------------------------ life
    def __enter__(self) -> "TestBed":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> "TestBed":
        probe_namespaces(self.prefix)
        if not os.access(SSHD, os.X_OK):
            raise TestBedError(f"{SSHD} is missing: install openssh-server")
        self._claim()
        try:
            self.tmp = Path(tempfile.mkdtemp(prefix=f"{self.prefix}-"))
            self._record()
            self._network()
            self._keys()
            for node in self.nodes.values():
                self.start_sshd(node)
        except BaseException:
            self.stop()
            raise
        return self

    def _claim(self) -> None:
        """Hold the test bed's lock; remove a stale test bed's leftovers; refuse names that
        exist but were not recorded by a test bed."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 4096).decode(errors="replace")
            os.close(fd)
            raise TestBedError(f"the test bed {self.prefix!r} is in use ({self.lock_path}: "
                               f"{owner or 'no record'})") from None
        self._lock_fd = fd
        record = self._read_record()
        existing = self._existing()
        if existing:
            recorded = set(record.get("namespaces", [])) | set(record.get("links", []))
            foreign = [name for name in existing if name not in recorded]
            if foreign:
                self._release()
                raise TestBedError(f"{', '.join(foreign)} exist(s) but no test bed recorded "
                                   f"creating them: remove them yourself or choose another "
                                   f"WB_TESTBED_PREFIX")
            self._teardown(record.get("namespaces", []), record.get("links", []),
                           record.get("tmp"))

    def _existing(self) -> list[str]:
        namespaces = {line.split()[0] for line in ip("netns", "list").stdout.splitlines() if line}
        names = [n.netns for n in self.nodes.values() if n.netns in namespaces]
        links = [self.bridge] + [n.veth_root for n in self.nodes.values()]
        names += [link for link in links if ip("link", "show", link, check=False).returncode == 0]
        return names

    def _read_record(self) -> dict:
        os.lseek(self._lock_fd, 0, os.SEEK_SET)
        text = os.read(self._lock_fd, 65536).decode(errors="replace")
        try:
            return json.loads(text) if text.strip() else {}
        except ValueError:
            return {}

    def _record(self) -> None:
        """What this test bed creates, written before it creates it: whoever finds the
        lock free later knows these names are a stale test bed's."""
        record = {"pid": os.getpid(), "started": _start_ticks(os.getpid()),
                  "namespaces": [n.netns for n in self.nodes.values()],
                  "links": [self.bridge] + [n.veth_root for n in self.nodes.values()],
                  "tmp": str(self.tmp)}
        os.ftruncate(self._lock_fd, 0)
        os.lseek(self._lock_fd, 0, os.SEEK_SET)
        os.write(self._lock_fd, json.dumps(record).encode())

    def _release(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)           # closing the descriptor releases the flock
            self._lock_fd = None

    def _network(self) -> None:
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.subnet}.1/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for node in self.nodes.values():
            ip("netns", "add", node.netns)
            ip("link", "add", node.veth_root, "type", "veth", "peer", "name", node.veth_ns)
            ip("link", "set", node.veth_ns, "netns", node.netns)
            ip("link", "set", node.veth_root, "master", self.bridge)
            ip("link", "set", node.veth_root, "up")
            ip("-n", node.netns, "addr", "add", f"{node.address}/24", "dev", node.veth_ns)
            ip("-n", node.netns, "link", "set", node.veth_ns, "up")
            ip("-n", node.netns, "link", "set", "lo", "up")

    def _keys(self) -> None:
        import asyncssh
        client = asyncssh.generate_private_key("ssh-ed25519", comment="webbench-testbed")
        client.write_private_key(str(self.client_key))
        os.chmod(self.client_key, 0o600)
        (self.tmp / "authorized_keys").write_bytes(client.export_public_key())
        known = []
        for node in self.nodes.values():
            key = asyncssh.generate_private_key("ssh-ed25519", comment=f"host {node.role}")
            path = self.tmp / f"host_{node.role}"
            key.write_private_key(str(path))
            os.chmod(path, 0o600)
            known.append(f"{node.address} {key.export_public_key().decode().strip()}")
        self.known_hosts.write_text("\n".join(known) + "\n")

    def sshd_config(self, node: Node, port: int | None = None, *, sftp: bool = True) -> Path:
        """The node's sshd configuration (on another port, or without the SFTP subsystem,
        for a second sshd: see extra_sshd)."""
        port = port or node.port
        path = self.tmp / (f"sshd_{node.role}.conf" if port == node.port
                           else f"sshd_{node.role}_{port}.conf")
        path.write_text("\n".join([
            f"ListenAddress {node.address}:{port}",
            f"HostKey {self.tmp / f'host_{node.role}'}",
            "PidFile none",
            f"AuthorizedKeysFile {self.tmp / 'authorized_keys'}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",             # the keys live in a temp folder under /tmp
            *(["Subsystem sftp internal-sftp"] if sftp else []),
            "LogLevel VERBOSE",
            "",
        ]))
        return path

    def extra_sshd(self, node: Node, port: int, *, sftp: bool = True) -> subprocess.Popen:
        """A second sshd on the node, on `port` (its host key is known as [address]:port),
        without the SFTP subsystem when `sftp` is False; killed with the namespace at the
        latest. Returns once it greets."""
        import asyncssh
        key = asyncssh.read_private_key(str(self.tmp / f"host_{node.role}"))
        with open(self.known_hosts, "a") as f:
            f.write(f"[{node.address}]:{port} {key.export_public_key().decode().strip()}\n")
        log = self.tmp / f"sshd_{node.role}_{port}.log"
        proc = subprocess.Popen(
            ["ip", "netns", "exec", node.netns, SSHD, "-D",
             "-f", str(self.sshd_config(node, port, sftp=sftp)), "-E", str(log)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_greeting(proc, node, port, log)
        return proc

    def _wait_greeting(self, proc: subprocess.Popen, node: Node, port: int, log: Path) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace").strip()
                raise TestBedError(f"sshd in {node.netns} exited ({proc.returncode}): "
                                   f"{err or self._read(log)}")
            try:
                with socket.create_connection((node.address, port), timeout=1) as s:
                    if s.recv(64).startswith(b"SSH-"):
                        return
            except OSError as exc:
                last = str(exc)
            time.sleep(0.05)
        raise TestBedError(f"sshd in {node.netns} did not answer on {node.address}:{port} "
                           f"within {READY_TIMEOUT_S:.0f} s ({last}); log: {self._read(log)}")

    @staticmethod
    def _read(log: Path) -> str:
        try:
            return log.read_text()[-2000:]
        except OSError:
            return ""

    def start_sshd(self, node: Node) -> None:
        """(Re)start the node's sshd and wait until it greets on its address."""
        # sshd's privilege separation needs this folder; the package creates it at boot
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        config = self.sshd_config(node)
        log = self.tmp / f"sshd_{node.role}.log"
        node.sshd = subprocess.Popen(
            ["ip", "netns", "exec", node.netns, SSHD, "-D", "-f", str(config), "-E", str(log)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._wait_greeting(node.sshd, node, node.port, log)

    def sshd_log(self, node: Node) -> str:
        return self._read(self.tmp / f"sshd_{node.role}.log") if self.tmp else ""

    def stop(self) -> None:
        """Kill everything in the namespaces, delete them, the bridge and the temp folder.
        Every step runs even when one before it failed; TestBedError lists what failed."""
        problems = self._teardown([n.netns for n in self.nodes.values()],
                                  [self.bridge] + [n.veth_root for n in self.nodes.values()],
                                  str(self.tmp) if self.tmp else None)
        for node in self.nodes.values():
            if node.sshd is not None:
                try:
                    node.sshd.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    problems.append(f"sshd of {node.netns} (pid {node.sshd.pid}) did not exit")
                node.sshd = None
        if not problems and self._lock_fd is not None:
            os.ftruncate(self._lock_fd, 0)    # nothing of ours is left: names are free again
        self._release()
        if problems:
            raise TestBedError("test bed teardown: " + "; ".join(problems))

    def _teardown(self, namespaces: list[str], links: list[str], tmp: str | None) -> list[str]:
        problems = []
        listed = {line.split()[0] for line in ip("netns", "list", check=False).stdout.splitlines()
                  if line}
        for netns in namespaces:
            if netns not in listed:
                continue
            for sig_wait in (2.0, 3.0):
                for pid in namespace_pids(netns):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                deadline = time.monotonic() + sig_wait
                while namespace_pids(netns) and time.monotonic() < deadline:
                    time.sleep(0.05)
            left = namespace_pids(netns)
            if left:
                problems.append(f"processes {left} survived SIGKILL in {netns}")
            done = ip("netns", "del", netns, check=False)
            if done.returncode != 0:
                problems.append(f"ip netns del {netns}: {done.stderr.strip()}")
        if tmp:                   # e.g. an sshd whose namespace someone deleted by name
            for pid in _using(tmp):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for link in links:        # a veth's root end goes with its namespace; the bridge stays
            if ip("link", "show", link, check=False).returncode == 0:
                done = ip("link", "del", link, check=False)
                # the kernel removes a veth's root end after its namespace, not at once:
                # one that went between the show and the del is gone, as asked
                if done.returncode != 0 and "Cannot find device" not in done.stderr:
                    problems.append(f"ip link del {link}: {done.stderr.strip()}")
        if tmp and Path(tmp).exists() and Path(tmp).name.startswith(f"{self.prefix}-"):
            shutil.rmtree(tmp, ignore_errors=True)
        return problems


def netns_testbed_fixture():
    """The body of the `netns_testbed` fixture: a started TestBed, always stopped; the
    test is skipped (with the kernel's reason) only when namespaces are not allowed."""
    import pytest
    bed = TestBed()
    try:
        bed.start()
    except NamespacesUnavailable as exc:
        pytest.skip(f"network namespaces cannot be created here: {exc}")
    try:
        yield bed
    finally:
        bed.stop()


def _fixture():
    import pytest
    return pytest.fixture(scope="module", name="netns_testbed")(netns_testbed_fixture)


try:                      # importable without pytest (a context manager is enough there)
    netns_testbed = _fixture()
except ImportError:       # pragma: no cover
    netns_testbed = None
