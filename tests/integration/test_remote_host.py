"""RemoteHost over real SSH, against sshd in network namespaces of this machine
(tests/netns/testbed.py); and the hosts file's validation.

The namespaces share this machine's filesystem and pid numbers, so each test checks from
outside what the remote host did: which network namespace a process really ran in, that
nothing it started is left, what a copied file holds.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

import pytest

from bench.infra.host import LOCAL, HostUnreachable
from bench.infra.hosts import HostsError, load_hosts
from tests.conftest import NETNS
from tests.netns.testbed import ip, netns_testbed  # noqa: F401 - the module's fixture

# network namespaces of fixed names and ports: one xdist worker at a time
pytestmark = NETNS

PORT = 18680                   # this suite's own port, inside the namespaces
NO_SFTP_PORT = 2201            # a second sshd, without the SFTP subsystem
CONFIG_PORT = 2202             # a second sshd that only the SSH configuration names

# a group leader forking three children that each burn a little CPU, then all wait
# each child burns about half a second of CPU: the kernel counts CPU time in 10 ms
# ticks it samples, so a 40 ms burst read as 0 ticks once in CI on a loaded machine
FORKS_3 = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        sum(range(3 * 10**7))
        time.sleep(120)
        os._exit(0)
time.sleep(120)
"""

LISTENER = f"""
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], {PORT}))
s.listen(16)
held = []
while True:
    held.append(s.accept()[0])
"""


def until(predicate, timeout: float, step: float = 0.05):
    """predicate()'s first truthy value within timeout, else its last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(step)


@pytest.fixture
def hosts(netns_testbed):
    """A factory of RemoteHosts on the test bed's nodes, each closed after the test."""
    made = []

    def make(role: str, **kwargs):
        host = netns_testbed.remote_host(role, **kwargs)
        made.append(host)
        return host
    yield make
    for host in made:
        host.close()


def started_here(node, host) -> list[int]:
    """Processes in the node's namespace other than sshd and the host's own agent."""
    return [p for p in node.others() if p != host.agent_pid]


# ------------------------------------------------------------------ run

def test_run_returns_output_status_and_its_own_cpu_time(hosts):
    host = hosts("server")
    busy = "import sys; sum(range(10**7)); print('out'); print('err', file=sys.stderr); sys.exit(3)"
    done = host.run(["python3", "-c", busy], timeout=30)
    assert (done.returncode, done.stdout, done.stderr, done.timed_out) == (3, "out\n", "err\n", False)
    assert 0.05 < done.cpu_s <= done.wall_s + 0.05, done
    # the CPU of children it reaped is its own too (wait4's rusage, as on LocalHost)
    nested = host.run(["sh", "-c", "python3 -c 'sum(range(10**7))'; echo done"], timeout=30)
    assert nested.returncode == 0 and nested.stdout == "done\n"
    assert nested.cpu_s > 0.05, nested


def test_run_stops_a_command_past_its_timeout(hosts):
    host = hosts("server")
    seen = []
    start = time.monotonic()
    done = host.run(["sleep", "30"], timeout=0.5, on_start=seen.append)
    assert done.timed_out and done.returncode == -signal.SIGINT, done
    assert time.monotonic() - start < 10        # not the 30 s: slack for a busy machine
    assert len(seen) == 1 and seen[0] > 1


def test_spawn_of_a_missing_program_raises_file_not_found(hosts):
    host = hosts("server")
    with pytest.raises(FileNotFoundError) as caught:
        host.spawn(["/nonexistent/webbench-program"])
    assert caught.value.filename == "/nonexistent/webbench-program"


# ------------------------------------------------------------------ processes

def test_spawn_tree_read_and_signal_group_stop_the_whole_group(hosts, netns_testbed):
    node = netns_testbed.nodes["server"]
    host = hosts("server")
    proc = host.spawn(["python3", "-c", FORKS_3], env={"PATH": "/usr/bin:/bin", "WB_MARK": "42"},
                      log_path="logs/forks.log")
    tree = until(lambda: host.tree(proc.pid) if len(host.tree(proc.pid)) == 4 else None, 10)
    assert tree and tree[0].pid == proc.pid, host.tree(proc.pid)
    assert proc.poll() is None

    # it really runs in the server's namespace (seen from this, the root, namespace)
    for ref in tree:
        assert os.readlink(f"/proc/{ref.pid}/ns/net") == f"net:[{node.net_inode()}]"
    assert os.readlink(f"/proc/{proc.pid}/ns/net") != os.readlink("/proc/self/ns/net")

    figures = until(lambda: (lambda f: f if all(x and x.cpu_s > 0 for x in list(f.values())[1:])
                             else None)(host.read_many(tree, memory=True)), 10)
    assert figures, host.read_many(tree, memory=True)
    assert all(f.memory_kind == "pss" and f.memory_mb > 0 for f in figures.values()), figures
    assert host.command_line(tree[1]).startswith("python3 -c")
    assert "WB_MARK=42" in host.environment(tree[0])
    assert host.thread_names(proc.pid) == ["python3"]
    assert host.running(tree, zombies=False) == tree
    assert (netns_testbed.tmp / "work" / "server" / "logs" / "forks.log").read_text() \
        .startswith("$ python3 -c")

    assert host.signal_group(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=5) == -signal.SIGTERM
    assert until(lambda: not host.running(tree, zombies=False), 5), host.running(tree)
    assert host.read(tree[1], memory=False) is None or not host.running(tree, zombies=False)
    assert until(lambda: not started_here(node, host), 5), started_here(node, host)
    # the group is gone once its last zombie is reaped (by init: the leader died first)
    assert until(lambda: not host.signal_group(proc.pid, 0), 5)


def test_the_resource_sampler_reads_a_remote_group(hosts):
    from bench.infra.resources import ResourceSampler
    host = hosts("server")
    proc = host.spawn(["python3", "-c", "import socket, time\n"
                       "listener = socket.create_server(('127.0.0.1', 0))\n"
                       "t = time.time()\nwhile time.time() - t < 10: pass"])
    try:
        # its listener open (asked of the remote agent: ss in its network namespace)
        deadline = time.monotonic() + 30
        while host.socket_memory({"p": host.tree(proc.pid)})["p"][1] < 1:
            assert time.monotonic() < deadline, "the remote process never listened"
            time.sleep(0.05)
        with ResourceSampler({"remote": (lambda: [r.pid for r in host.tree(proc.pid)], host),
                              "local": lambda: []}) as sampler:
            time.sleep(1.2)
        figures = sampler.figures()
    finally:
        host.signal_group(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    remote = figures["remote"]
    # a busy loop: never more than one core; how much of one it gets depends on what else
    # runs (0.29 s of 1.2 s beside 3 test workers on 2 cores, in CI), but an idle process
    # reads 0 and a busy one clearly more
    assert 0.05 < remote["cpu_s"] < 1.2 * figures["window_s"] + 0.1, figures
    assert remote["processes"] == 1 and remote["memory_kind"] == "pss", figures
    # read with the memory: its one idle listener
    assert remote["socket_memory_mb"] == {"mean": 0.0, "peak": 0.0, "sockets": 1}, figures
    assert figures["local"]["processes"] == 0


def test_wait_times_out_like_popen_and_pin_sets_the_affinity(hosts):
    host = hosts("server")
    proc = host.spawn(["sleep", "30"])
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
    host.pin(proc.pid, [0])
    assert host.affinity(proc.pid) == [0]
    ref = host.process(proc.pid)
    assert ref is not None and host.kill(ref)
    assert proc.wait(timeout=5) == -signal.SIGKILL
    assert host.affinity(proc.pid) is None


# ------------------------------------------------------------------ network and tools

def test_port_which_and_connections_on_port(hosts, netns_testbed):
    node = netns_testbed.nodes["server"]
    host = hosts("server")
    assert host.port_is_free(PORT, node.address)
    accepted_before = host.tcp_connections_accepted()
    proc = host.spawn(["python3", "-c", LISTENER, node.address])
    assert until(lambda: not host.port_is_free(PORT, node.address), 10)
    clients = [socket.create_connection((node.address, PORT), timeout=5) for _ in range(3)]
    try:
        tree = host.tree(proc.pid)
        assert until(lambda: host.connections_on_port(tree, PORT) == {proc.pid: 3}, 5), \
            host.connections_on_port(tree, PORT)
        assert host.tcp_connections_accepted() - accepted_before >= 3
    finally:
        for c in clients:
            c.close()
        host.signal_group(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    assert host.which("python3").endswith("/python3")
    assert host.which("webbench-no-such-tool") is None


def test_put_and_get_copy_files_and_folders(hosts, netns_testbed, tmp_path):
    host = hosts("client")
    payload = os.urandom(300_000)
    (tmp_path / "a.bin").write_bytes(payload)
    host.put(tmp_path / "a.bin", "copied/deep/a.bin")          # relative: under workdir
    remote_file = netns_testbed.tmp / "work" / "client" / "copied" / "deep" / "a.bin"
    assert remote_file.read_bytes() == payload
    host.get("copied/deep/a.bin", tmp_path / "back" / "a.bin")
    assert (tmp_path / "back" / "a.bin").read_bytes() == payload

    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "top.txt").write_text("top")
    (tree / "sub" / "inner.txt").write_text("inner")
    host.put(tree, "project")
    host.get("project", tmp_path / "tree-back")
    assert (tmp_path / "tree-back" / "top.txt").read_text() == "top"
    assert (tmp_path / "tree-back" / "sub" / "inner.txt").read_text() == "inner"
    with pytest.raises(OSError):
        host.get("no/such/file", tmp_path / "nothing")


def test_fingerprint_has_the_environment_blocks_keys(hosts):
    block = hosts("db").fingerprint()
    local = LOCAL.fingerprint()
    assert set(block) == set(local) and set(block["tools"]) == set(local["tools"])
    assert block["kernel"] == local["kernel"] and block["cpu_count"] == local["cpu_count"]


def test_the_machine_state_and_foreign_load_are_read_on_the_remote_host(hosts):
    """bench.infra.quiet reads the remote server host through its agent: its state, and
    a snapshot whose harness is the agent's own tree (what it started there)."""
    from bench.infra.quiet import MachineWatch
    host = hosts("db")
    snapshot = host.call("cpu_snapshot")
    assert host.agent_pid in snapshot["harness"] and snapshot["hz"] > 0
    reading = MachineWatch(host).reading("before the run")
    assert "unavailable" not in reading and reading["loopback_mtu"] \
        and 0 <= reading["load"]["foreign_cpu_share"] <= 1


# ------------------------------------------------------------------ failures and cleanup

def test_close_leaves_nothing_it_started_in_any_namespace(netns_testbed):
    made = {role: netns_testbed.remote_host(role) for role in netns_testbed.nodes}
    try:
        procs = {role: host.spawn(["sh", "-c", "sleep 300 & sleep 300 & wait"])
                 for role, host in made.items()}
        for role, host in made.items():
            assert until(lambda: len(host.tree(procs[role].pid)) == 3, 5)
            assert len(netns_testbed.nodes[role].others()) >= 4       # agent + 3
    finally:
        problems = [host.close() for host in made.values()]
    assert problems == [None] * len(made)
    for node in netns_testbed.nodes.values():
        assert until(lambda: not node.others(), 5), (node.netns, node.others())


def test_a_host_whose_sshd_is_killed_raises_host_unreachable(hosts, netns_testbed):
    node = netns_testbed.nodes["db"]
    host = hosts("db")
    proc = host.spawn(["sleep", "300"])
    try:
        node.kill_sshd()
        start = time.monotonic()
        with pytest.raises(HostUnreachable) as caught:
            host.which("sh")
        assert time.monotonic() - start < 10    # the session ends at once: slack for a busy machine
        message = str(caught.value)
        assert host.name in message and "unreachable" in message
        assert "connection" in message.lower() or "exited" in message, message
        with pytest.raises(HostUnreachable):               # and every call after it
            proc.poll()
        # its agent saw its session end and stopped what it had started
        assert until(lambda: not node.others(), 5), node.others()
        start = time.monotonic()
        problem = host.close()                              # bounded, never raises
        assert time.monotonic() - start < 20
        assert problem and host.name in problem, problem    # sshd is down: says so
    finally:
        netns_testbed.start_sshd(node)


def test_a_silently_lost_link_is_noticed_within_the_call_timeout(hosts, netns_testbed):
    node = netns_testbed.nodes["client"]
    host = hosts("client", call_timeout=2.0, watchdog_s=3.0)
    host.connect()
    agent = host.agent_pid
    ip("link", "set", node.veth_root, "down")
    try:
        start = time.monotonic()
        with pytest.raises(HostUnreachable) as caught:
            host.which("sh")
        assert time.monotonic() - start < 2.0 + 6
        assert "no answer" in str(caught.value)
        # without a word from the harness the agent's watchdog ends it
        assert until(lambda: agent not in node.pids(), 10), node.pids()
    finally:
        ip("link", "set", node.veth_root, "up")


def test_a_slow_answer_fails_that_request_only_while_the_liveness_probe_answers(hosts):
    from bench.infra.remote import RemoteError
    # the probe answers in ms; 5 s, so that a busy machine's stall is not a lost host
    host = hosts("server", call_timeout=5.0)
    proc = host.spawn(["sleep", "30"])
    try:
        start = time.monotonic()
        with pytest.raises(RemoteError, match="answers the liveness probe"):
            host._call("wait", within=0.3, pid=proc.pid, timeout=5)   # the agent's own request
        # the request's 0.3 s, then a probe answered within its call timeout; plus slack
        assert time.monotonic() - start < 0.3 + 5.0 + 2
        assert host.unreachable is None and host.which("sh") and proc.poll() is None
    finally:
        host.signal_group(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def test_without_sftp_a_copy_is_a_transfer_error_and_the_host_stays_reachable(
        netns_testbed, tmp_path):
    """The fault found by a user: an sshd that offers no SFTP subsystem. Fetching a file
    failed, the host was marked unreachable and every later case failed with it."""
    from bench.infra.remote import RemoteHost
    from bench.infra.seam import TransferError
    node = netns_testbed.nodes["server"]
    sshd = netns_testbed.extra_sshd(node, NO_SFTP_PORT, sftp=False)
    host = RemoteHost(node.address, name="no-sftp", user="root", port=NO_SFTP_PORT,
                      workdir=str(netns_testbed.tmp / "work" / "server"),
                      connect_options=netns_testbed.connect_options())
    try:
        proc = host.spawn(["sh", "-c", "echo logged; sleep 300"], log_path="logs/server.log")
        assert until(lambda: "logged" in (netns_testbed.tmp / "work" / "server" / "logs" /
                                          "server.log").read_text(), 5)
        with pytest.raises(TransferError) as caught:
            host.get("logs/server.log", tmp_path / "server.log")
        assert "no-sftp" in str(caught.value) and "SFTP" in str(caught.value)
        (tmp_path / "up.txt").write_text("x")
        with pytest.raises(TransferError):
            host.put(tmp_path / "up.txt", "up.txt")
        # the host is as reachable as before: every other call still works
        assert host.unreachable is None and host.alive()
        assert host.which("sh") and proc.poll() is None
        assert host.signal_group(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=5) == -signal.SIGTERM
    finally:
        assert host.close() is None
        sshd.kill()
        sshd.wait(timeout=5)


def test_the_ssh_configurations_port_is_used_when_the_hosts_file_names_none(
        netns_testbed, tmp_path):
    node = netns_testbed.nodes["client"]
    sshd = netns_testbed.extra_sshd(node, CONFIG_PORT)
    config = tmp_path / "ssh_config"
    config.write_text(f"Host {node.address}\n  Port {CONFIG_PORT}\n")
    hosts_file = tmp_path / "hosts.toml"
    hosts_file.write_text(f'[client]\naddress = "{node.address}"\nuser = "root"\n'
                          f'workdir = "{netns_testbed.tmp / "work" / "client"}"\n')
    options = {**netns_testbed.connect_options(), "config": [str(config)]}
    try:
        with load_hosts(hosts_file, **options) as hosts:
            assert hosts.specs["client"].port is None
            client = hosts.for_role("client")
            assert client.which("sh")
            assert client.port == CONFIG_PORT                 # the connection's own port
            assert hosts.topology()["client"] == f"root@{node.address}:{CONFIG_PORT}"
        assert hosts.close_problems == []
    finally:
        sshd.kill()
        sshd.wait(timeout=5)


def test_connecting_to_a_host_without_sshd_fails_with_its_name(netns_testbed):
    from bench.infra.remote import RemoteHost
    node = netns_testbed.nodes["server"]
    host = RemoteHost(node.address, port=2222, user="root",
                      connect_options=netns_testbed.connect_options())
    try:
        with pytest.raises(HostUnreachable) as caught:
            host.tree(1)
        assert f"{node.address} port 2222" in str(caught.value)
    finally:
        assert host.close() is None


# ------------------------------------------------------------------ the hosts file

def test_hosts_file_roles_topology_and_shared_connections(netns_testbed):
    path = netns_testbed.hosts_file({"client": "client", "server": "server",
                                     "database": "server"})
    with load_hosts(path, **netns_testbed.connect_options()) as hosts:
        server = hosts.for_role("server")
        assert hosts.for_role("database") is server
        assert len(hosts.remote_hosts()) == 2
        assert hosts.topology() == {"client": f"root@{netns_testbed.nodes['client'].address}",
                                    "server": f"root@{netns_testbed.nodes['server'].address}",
                                    "database": f"root@{netns_testbed.nodes['server'].address}"}
        proc = server.spawn(["sleep", "300"])
        pid = proc.pid
        assert proc.poll() is None
    assert hosts.close_problems == []
    node = netns_testbed.nodes["server"]
    assert until(lambda: pid not in node.pids() and not node.others(), 5), node.others()


def test_a_role_not_named_runs_locally(tmp_path):
    path = tmp_path / "hosts.toml"
    path.write_text('[server]\naddress = "bench-server"\n')
    hosts = load_hosts(path)
    assert hosts.for_role("client") is LOCAL and hosts.for_role("database") is LOCAL
    assert hosts.topology() == {"client": "local", "server": "bench-server", "database": "local"}
    spec = hosts.specs["server"]
    # no port: the one the SSH configuration names for that address (else 22)
    assert (spec.port, spec.user, spec.workdir, spec.python) == (None, None, "~/webbench", "python3")
    hosts.close()                     # nothing was connected: nothing to do


@pytest.mark.parametrize("text, expected", [
    ('[proxy]\naddress = "x"\n', "unknown role [proxy]"),
    ('address = "x"\n', "'address' at the top level"),
    ('[server]\nuser = "me"\n', "[server] has no address"),
    ('[server]\naddress = "x"\nport = "22"\n', "[server] port = '22'"),
    ('[server]\naddress = "x"\nport = 70000\n', "from 1 to 65535"),
    ('[database]\naddress = "x"\nmode = "external"\n', "mode = 'external'"),
    ('[server]\naddress = "x"\nmode = "local"\n', "unknown key 'mode'"),
    ('[client]\naddress = "x"\npassword = "hunter2"\n', "never read from this file"),
    ('[client]\naddress = ""\n', "address = ''"),
    ('[client\naddress = "x"\n', "not valid TOML"),
])
def test_hosts_file_errors_name_the_file_the_key_and_what_is_allowed(tmp_path, text, expected):
    path = tmp_path / "hosts.toml"
    path.write_text(text)
    with pytest.raises(HostsError) as caught:
        load_hosts(path)
    assert str(caught.value).startswith(f"{path}: ") and expected in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_missing_hosts_file_is_named(tmp_path):
    with pytest.raises(HostsError, match="no such hosts file"):
        load_hosts(tmp_path / "absent.toml")
