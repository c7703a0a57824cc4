"""FakeHost (bench/infra/fake.py) itself, and the server, proxy and process-group code
driven on it: no process is started, so everything they do goes through the Host seam."""
from __future__ import annotations

import inspect
import json
import signal

import pytest

from bench.core import manifest
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra import state
from bench.infra.fake import FIRST_PID, FakeHost, example
from bench.infra.host import LocalHost
from bench.infra.hosts import Hosts, HostSpec
from bench.infra.lifecycle import running_server
from bench.infra.process_group import ProcessGroup
from bench.infra.proxy import available_proxies
from bench.infra.remote import RemoteHost
from bench.infra.seam import Completed, Host, HttpUnanswered, TransferError
from bench.infra.server import ServerProcess
from bench.infra.topology import round_trip

SPECS = manifest.discover()


def protocol_members() -> set[str]:
    return {name for name in dir(Host) if not name.startswith("_")} | \
        set(Host.__annotations__)


@pytest.mark.parametrize("make", [LocalHost, lambda: RemoteHost("192.0.2.1"), FakeHost])
def test_every_host_has_every_member_of_the_protocol_with_its_parameters(make):
    host = make()                    # a RemoteHost connects on its first call only
    for name in protocol_members():
        assert hasattr(host, name), (type(host).__name__, name)
        declared = getattr(Host, name, None)
        if callable(declared):
            want = list(inspect.signature(declared).parameters)
            have = list(inspect.signature(getattr(type(host), name)).parameters)
            assert have == want, (type(host).__name__, name, have, want)
    assert isinstance(host, Host)


# ------------------------------------------------------------------ the fake itself

def test_spawn_writes_the_log_and_signals_end_the_group(tmp_path):
    fake = FakeHost()
    proc = fake.spawn(["sleeper", "--long"], log_path=tmp_path / "out.log", cpus=[1])
    assert proc.pid >= FIRST_PID and proc.poll() is None
    assert (tmp_path / "out.log").read_text() == "$ taskset --cpu-list 1 sleeper --long\n"
    ref = fake.process(proc.pid)
    assert fake.tree(proc.pid) == [ref] and fake.running([ref]) == [ref]
    assert fake.command_line(ref) == "sleeper --long" and fake.affinity(proc.pid) == [1]
    figures = fake.read(ref, memory=True)
    assert figures.cpu_s >= 0 and figures.memory_kind == "pss"
    with pytest.raises(Exception, match="sleeper"):
        proc.wait(timeout=1)                         # it never ends by itself
    assert fake.signal_group(proc.pid, signal.SIGTERM)
    assert proc.wait() == -signal.SIGTERM and proc.signals == [signal.SIGTERM]
    assert fake.running([ref]) == [] and fake.read(ref, memory=False) is None
    assert not fake.signal_group(proc.pid, signal.SIGKILL)
    assert [e[0] for e in fake.events] == ["spawn", "signal_group", "signal_group"]


def test_a_stubborn_process_is_ended_by_sigkill_only():
    fake = FakeHost()
    proc = fake.spawn(["stubborn"])
    proc.ignores.add(signal.SIGTERM)
    group = ProcessGroup(fake, proc, ["stubborn"])
    group.stop(signal.SIGTERM, grace=0.05)
    assert proc.signals == [signal.SIGTERM, signal.SIGKILL] and proc.returncode == -signal.SIGKILL
    assert ("kill", proc.pid) in fake.events


def test_a_group_interrupted_while_it_is_recorded_is_stopped_not_lost(monkeypatch):
    """A Ctrl-C or SIGTERM can land while the group is written to the state file (a busy
    disk): the process then belongs to nobody yet, so start() stops it itself."""
    fake = FakeHost()

    def interrupted(pid, argv):
        raise KeyboardInterrupt("signal 15")
    monkeypatch.setattr(state, "group_started", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ProcessGroup.start(fake, ["sleeper"])
    assert [e[0] for e in fake.events][0] == "spawn"
    assert ("signal_group", FIRST_PID, int(signal.SIGKILL)) in fake.events, fake.events
    assert fake.running(list(fake.processes([FIRST_PID]).values())) == []


def test_run_answers_from_what_the_test_set_up():
    fake = FakeHost()
    fake.on_run("wrk", lambda argv: Completed(argv, 0, "Requests/sec: 5.0\n", "", 0.5, 1.0))
    seen = []
    done = fake.run(["wrk", "-c", "8"], timeout=10, on_start=seen.append)
    assert done.stdout.startswith("Requests/sec") and seen and seen[0] >= FIRST_PID
    assert fake.run(["true"], timeout=1).returncode == 0
    assert [d.argv[0] for d in fake.ran] == ["wrk", "true"]
    fake.missing_tools.add("oha")
    assert fake.which("oha") is None and fake.which("wrk") == "/usr/bin/wrk"
    with pytest.raises(FileNotFoundError):
        fake.run(["oha"], timeout=1)
    with pytest.raises(FileNotFoundError):
        fake.spawn(["oha"])


def test_ports_http_and_accepted_connections():
    fake = FakeHost()
    assert fake.port_is_free(8080)
    fake.busy_ports.add(8080)
    assert not fake.port_is_free(8080)
    with pytest.raises(HttpUnanswered) as caught:
        fake.http_get("http://127.0.0.1:9000/ping/", timeout=1)
    assert caught.value.reason == "ConnectionError"
    fake.serve(9000, {"hello": "world"})
    answer = fake.http_get("http://127.0.0.1:9000/anything", timeout=1)
    assert (answer.status, answer.json()) == (200, {"hello": "world"})
    assert not fake.port_is_free(9000) and fake.tcp_connections_accepted() == 1
    assert fake.http_requests == ["http://127.0.0.1:9000/ping/", "http://127.0.0.1:9000/anything"]
    assert fake.call("rtt", address="x", port=22, samples=3)["median_ms"] > 0
    with pytest.raises(NotImplementedError, match="survey"):
        fake.call("survey", folders=[], data="", pid_file="", names=[])


def test_copies_fail_as_transfers_when_told(tmp_path):
    fake = FakeHost(remote=True)
    (tmp_path / "a").write_text("a")
    fake.put(tmp_path / "a", "there/a")
    fake.get("there/a", tmp_path / "back")
    assert (tmp_path / "back").read_text() == "a"
    fake.fail_transfers = "no SFTP subsystem"
    with pytest.raises(TransferError, match="no SFTP subsystem"):
        fake.get("there/a", tmp_path / "again")


def test_examples_match_the_worker_patterns_of_every_manifest():
    patterns = [s.worker_check.match for s in SPECS.values() if s.worker_check.match]
    patterns += [p.workers_match for p in available_proxies().values() if p.workers_match]
    assert patterns
    for pattern in patterns:
        assert example(pattern)
    with pytest.raises(ValueError, match="worker_text"):
        example("^a[0-9]+$")


# ------------------------------------------------------------------ real server code on it

def settings(**changes) -> Settings:
    return Settings(workers=3, port=18090, **changes)


@pytest.mark.parametrize("server_id", sorted(SPECS))
def test_a_server_of_every_manifest_starts_and_stops_on_a_fake_host(server_id, tmp_path):
    fake = FakeHost()
    spec = SPECS[server_id]
    server = ServerProcess(Variant(spec, "none", False), settings(), None, tmp_path / "s.log",
                           host=fake)
    with server:
        server.wait_ready()
        seen, what = server.worker_census()
        # W = 3 processes or per-thread loops, or a work-stealing runtime's threads: as
        # many as the fake's 2 CPUs (--runtime-threads cpus)
        assert server.workers == (2 if spec.scheduler == "work-stealing" else 3)
        if spec.worker_check.count == "none":
            assert seen is None
        else:
            assert seen == server.workers, what
        pids = server.pids()
        assert pids[0] == server.proc.pid and len(pids) >= 1
        assert not fake.port_is_free(18090)
    assert server.proc.returncode == -getattr(signal, spec.stop_signal)
    assert fake.port_is_free(18090) and not fake.tree(server.proc.pid)
    assert fake.http_requests == ["http://127.0.0.1:18090/ping/"]
    leader = fake.spawned[0]
    assert leader.env["BENCH_SERVER_ID"] == server_id and leader.cwd == str(spec.dir)
    assert (tmp_path / "s.log").read_text().startswith("$ ")


def test_a_server_that_exits_before_it_is_ready_is_a_server_error(tmp_path):
    from bench.infra.server import ServerError
    fake = FakeHost()
    server = ServerProcess(Variant(SPECS["gin"], "none", False), settings(), None,
                           tmp_path / "s.log", host=fake)
    server.start()
    fake.exit(server.proc.pid, 2)
    with pytest.raises(ServerError, match="exited with code 2 before it was ready"):
        server.wait_ready()
    server.stop()


def test_a_log_that_cannot_be_fetched_is_a_warning_not_a_failure(tmp_path):
    fake = FakeHost("far", remote=True)
    fake.fail_transfers = "the host offers no SFTP subsystem"
    with running_server(Variant(SPECS["gin"], "none", False), settings(), None,
                        tmp_path / "s.log", host=fake) as running:
        pass
    assert running.overhead_s["stop"] >= 0
    # the log, and the static test's files that could not be copied there either
    assert len(running.warnings) == 2, running.warnings
    assert all("no SFTP subsystem" in w for w in running.warnings)
    assert running.warnings[0].startswith("no BENCH_STATIC_DIR on far: ")
    assert "could not be fetched" in (tmp_path / "s.log").read_text()


def test_a_proxy_in_front_answers_like_its_server_and_both_groups_are_recorded_stopped(
        tmp_path, monkeypatch):
    monkeypatch.setattr(state, "ACTIVE", None)
    record = state.activate(tmp_path / "state")
    try:
        fake = FakeHost()
        proxy = available_proxies()["nginx"]
        with running_server(Variant(SPECS["fastapi"], "none", False), settings(), None,
                            tmp_path / "s.log", proxy=proxy, host=fake) as running:
            assert running.base_url == "http://127.0.0.1:18090"
            answer = fake.http_get(f"{running.base_url}/ping/", timeout=1)
            assert answer.json() == {"server": "fastapi", "database": "none", "orm": False}
            assert running.proxy.workers() == 3 and len(running.proxy.pids()) == 4
            groups = json.loads(record.path.read_text())["groups"]
            assert len(groups) == 2                        # the server's and the proxy's
        assert json.loads(record.path.read_text())["groups"] == {}
        server, front = fake.spawned
        assert server.env["BENCH_PORT"] == "18091" and front.env["BENCH_PROXY_PORT"] == "18090"
        stops = [e for e in fake.events if e[0] == "signal_group"]
        assert stops[0][1] == front.pid                    # the proxy first, then the server
        assert front.returncode is not None and server.returncode is not None
    finally:
        state.deactivate()


# ------------------------------------------------------------------ hosts and topology

def test_a_hosts_file_without_a_port_leaves_it_to_the_ssh_configuration(tmp_path):
    from bench.infra.hosts import load_hosts
    path = tmp_path / "hosts.toml"
    path.write_text('[server]\naddress = "bench-server"\nuser = "me"\n'
                    '[database]\naddress = "10.0.0.4"\nport = 2222\n')
    hosts = load_hosts(path)
    assert hosts.specs["server"].port is None and hosts.specs["database"].port == 2222
    assert hosts.topology() == {"client": "local", "server": "me@bench-server",
                                "database": "10.0.0.4:2222"}
    assert hosts.for_role("server").port is None          # asyncssh applies the config's
    assert HostSpec("server", "x").label_with(2200) == "x:2200"
    assert HostSpec("server", "x").label_with(22) == "x"


def test_roles_not_in_the_hosts_file_run_on_the_local_host_given():
    fake = FakeHost()
    hosts = Hosts({"server": HostSpec("server", "10.0.0.3", port=2222)}, local=fake)
    assert hosts.for_role("client") is fake and hosts.for_role("database") is fake
    assert round_trip(hosts, "client", "server") == {
        "tcp_connect_ms_median": 0.1, "tcp_connect_ms_min": 0.1, "samples": 20,
        "to": "10.0.0.3:2222"}
    assert fake.calls == [("rtt", {"address": "10.0.0.3", "port": 2222, "samples": 20})]
    assert round_trip(Hosts(local=fake), "client", "server") is None


class _Counter:
    """An instruction counter's face to the server (bench.infra.counters): it wraps the
    command and adds to the environment."""
    def wrap(self, argv):
        return ["counter", *argv]

    def environment(self, env):
        return {}


def test_a_counted_start_runs_the_manifests_instructions_start(tmp_path):
    spec = SPECS["fastify"]
    assert spec.count.start and "--predictable" in spec.count.start
    plain = ServerProcess(Variant(spec, "none", False), settings(), None, tmp_path / "a.log")
    counted = ServerProcess(Variant(spec, "none", False), settings(), None, tmp_path / "b.log")
    counted.counter = _Counter()
    assert plain.command() == list(spec.start)
    assert counted.command() == list(spec.count.start) != list(spec.start)
