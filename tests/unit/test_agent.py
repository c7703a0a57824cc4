"""The harness's agent (bench/infra/agent), called in this process as LocalHost calls it,
and loaded from its own files by BOOT in a python3 subprocess as RemoteHost loads it on
another machine (only without SSH)."""
from __future__ import annotations

import ast
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bench.infra import agent
from bench.infra.agent import files, network, procfs, programs, service, steps
from bench.infra.environment import machine as local_machine


@pytest.fixture
def sleeper(tmp_path):
    """A `sleep` child working in tmp_path, killed after the test."""
    proc = subprocess.Popen(["sleep", "60"], cwd=tmp_path)
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def listener():
    """A listening TCP socket on a free loopback port."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    yield s
    s.close()


# ------------------------------------------------------------------ procfs

def test_a_process_is_named_by_pid_and_start(sleeper):
    start = procfs.started(sleeper.pid)
    assert start is not None and start >= procfs.started(os.getpid())
    me = procfs.tree(os.getpid())
    assert me[0] == [os.getpid(), procfs.started(os.getpid())]
    assert [sleeper.pid, start] in me
    state, reused = procfs.status([[sleeper.pid, start], [sleeper.pid, start + 1]])
    # alive in whatever state (a `sleep` just started may still be paging its binary
    # in: disk-sleep); the same pid with another start is another process
    assert state not in (None, "zombie", "dead") and reused is None, state
    assert procfs.cmdline(sleeper.pid, start) == "sleep 60"
    assert procfs.cmdline(sleeper.pid, start + 1) == ""            # a reused pid: nothing
    assert "PATH=" + os.environ["PATH"] in procfs.environ(sleeper.pid, start)
    assert procfs.thread_names(sleeper.pid) == ["sleep"]
    assert procfs.tree(2**30) == [] and procfs.started(2**30) is None


def test_cpu_memory_and_affinity_of_a_process(sleeper):
    start = procfs.started(os.getpid())
    sum(range(2 * 10**6))
    (cpu, memory, kind, split), = procfs.read([[os.getpid(), start]], memory=True)
    assert cpu > 0 and memory > 1 and kind in ("pss", "rss")
    # PSS's parts add up to it (each rounded to a KiB by the kernel)
    assert split is None or abs(sum(split.values()) - memory) < 0.01 and split["anon"] > 1
    assert procfs.read([[os.getpid(), start + 1]], memory=False) == [None]
    cpus = procfs.affinity(sleeper.pid)
    procfs.pin(sleeper.pid, cpus[:1])
    assert procfs.affinity(sleeper.pid) == cpus[:1]
    assert procfs.affinity(2**30) is None


def test_connections_listeners_and_accepted_connections(listener):
    port = listener.getsockname()[1]
    accepted = procfs.passive_opens()
    client = socket.create_connection(("127.0.0.1", port))
    server_side, _ = listener.accept()
    try:
        me = [os.getpid(), procfs.started(os.getpid())]
        # both ends are this process: the accepted socket has local port `port`
        assert procfs.connections([me], port) == {str(os.getpid()): 1}
        assert procfs.passive_opens() - accepted >= 1
        assert any(line.startswith(f"pid {os.getpid()} `") for line in procfs.listeners(port))
        assert not network.port_free(port)
    finally:
        client.close()
        server_side.close()


def test_server_processes_are_found_by_folder_and_name(sleeper, tmp_path):
    found = procfs.server_processes([str(tmp_path)], str(tmp_path), ["sleep"])
    assert found == [[sleeper.pid, True, False]]
    assert procfs.server_processes([str(tmp_path)], str(tmp_path), ["postgres"]) == []
    assert procfs.names_folder(f"--datadir={tmp_path}/data", str(tmp_path))
    assert not procfs.names_folder(f"--datadir={tmp_path}x", str(tmp_path))
    assert procfs.in_folder(f"{tmp_path}/pg (deleted)", str(tmp_path))
    pid_file = tmp_path / "server.pid"
    pid_file.write_text(f"{sleeper.pid}\n")
    survey = steps.survey([str(tmp_path)], str(tmp_path), str(pid_file), ["sleep"])
    assert survey == {"pid_file": sleeper.pid, "procs": [[sleeper.pid, True, False]]}


# ------------------------------------------------------------------ files, programs, network

def test_files_are_made_written_read_back_and_removed(tmp_path):
    folder = files.make_temp_folder("webbench-agent-test-")
    try:
        assert Path(folder).is_dir() and Path(folder).stat().st_mode & 0o777 == 0o755
        inner = os.path.join(folder, "inner")
        files.make_folder(inner, None)
        with pytest.raises(FileExistsError):
            files.make_folder(inner, None)
        path = os.path.join(inner, "f.txt")
        files.write_file(path, "x" * 10, 0o600)
        files.append(path, "tail")
        assert Path(path).stat().st_mode & 0o777 == 0o600
        assert files.tail_file(path, 6) == "xxtail"
        assert files.tail_file(os.path.join(folder, "absent"), 6) is None
        assert files.remove([inner, os.path.join(folder, "absent")]) == []
        assert not os.path.exists(inner)
    finally:
        files.remove([folder])
    assert files.euid() == os.geteuid()


def test_programs_and_round_trips(tmp_path, listener):
    assert programs.which("sh").endswith("/sh") and programs.which("webbench-no-such-tool") is None
    assert programs.find(["webbench-none", "/bin/sh"]) == "/bin/sh"
    assert programs.postgres_bindir(str(tmp_path)) == [None, True]
    server, installer = programs.mysqld_binaries()
    assert server is None or os.access(server, os.X_OK)
    port = listener.getsockname()[1]
    found = network.rtt("127.0.0.1", port, 3)
    assert 0 < found["min_ms"] <= found["median_ms"]
    with pytest.raises(OSError):
        network.rtt("127.0.0.1", 1, 1)


def test_machine_has_the_environment_blocks_keys_and_the_python():
    block = steps.machine()
    assert block.pop("python") == ".".join(map(str, sys.version_info[:3]))
    assert list(block) == ["hostname", "os", "kernel", "cpu_model", "cpu_count", "cpus_usable",
                           "cpu_governor", "cpu_mhz_max", "memory_gb", "load_average_at_start"]
    assert block.keys() == local_machine().keys()
    assert block["cpu_count"] == os.cpu_count() and block["memory_gb"] > 0


def test_every_step_is_an_operation_of_the_agent():
    assert set(steps.STEPS) <= set(service.OPS)
    # answered from threads of their own: the liveness probe is never held up by them
    assert service.SLOW >= set(steps.STEPS)


# ------------------------------------------------------------------ sent as its own files

def test_the_agent_imports_only_the_standard_library_and_its_siblings():
    folder = Path(agent.__file__).parent
    assert sorted(agent.MODULES) == sorted(p.stem for p in folder.glob("*.py")
                                           if p.stem != "__init__")
    for name in agent.MODULES:
        tree = ast.parse((folder / f"{name}.py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level == 1 or node.module.split(".")[0] in sys.stdlib_module_names \
                    or node.module == "__future__", (name, node.module)
            elif isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] in sys.stdlib_module_names for a in node.names), name
    sent = dict(json.loads(agent.payload()))
    assert list(sent) == list(agent.MODULES)
    assert sent["procfs"] == (folder / "procfs.py").read_text()


class Agent:
    """The agent started as RemoteHost starts it (python3 -c BOOT, its files on stdin)."""

    def __init__(self):
        self.proc = subprocess.Popen(["python3", "-c", agent.BOOT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE)
        self.proc.stdin.write(agent.payload())
        self.ids = iter(range(1, 10**6))

    def ask(self, op: str, **args) -> dict:
        data = json.dumps({"id": next(self.ids), "op": op, "args": args}).encode()
        self.proc.stdin.write(b"%d\n" % len(data) + data)
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.read(int(self.proc.stdout.readline())))


def test_the_agent_answers_by_operation_name_and_stops_what_it_started(tmp_path):
    bot = Agent()
    try:
        hello = bot.ask("hello", watchdog_s=30)["result"]
        assert hello["pid"] == bot.proc.pid and hello["home"] == os.path.expanduser("~")
        assert bot.ask("ping") == {"id": 2, "ok": True, "result": None}
        done = bot.ask("start", argv=["sh", "-c", "echo out; echo err >&2; exit 3"],
                       capture=True)["result"]
        waited = bot.ask("wait", pid=done["pid"], timeout=10)["result"]
        assert (waited["returncode"], waited["stdout"], waited["stderr"]) == (3, "out\n", "err\n")
        missing = bot.ask("start", argv=["/nonexistent/webbench"])
        assert (missing["ok"], missing["errno"], missing["filename"]) == \
            (False, 2, "/nonexistent/webbench")
        log = tmp_path / "logs" / "sleep.log"
        sleeping = bot.ask("start", argv=["sleep", "60"], log=str(log))["result"]
        assert log.read_text() == "$ sleep 60\n"
        assert bot.ask("tree", pid=sleeping["pid"])["result"] == \
            [[sleeping["pid"], sleeping["start"]]]
        assert bot.ask("euid")["result"] == os.geteuid()            # a step, by name
        assert bot.ask("shutdown")["result"] == 1                   # the sleep was running
        assert bot.proc.wait(timeout=10) == 0
        assert procfs.started(sleeping["pid"]) is None or \
            procfs.status([[sleeping["pid"], sleeping["start"]]]) == [None]
    finally:
        if bot.proc.poll() is None:
            bot.proc.send_signal(signal.SIGKILL)
            bot.proc.wait()


def test_the_agent_stops_its_children_when_its_stdin_ends():
    bot = Agent()
    bot.ask("hello", watchdog_s=30)
    started = bot.ask("start", argv=["sleep", "60"])["result"]
    bot.proc.stdin.close()                                          # the SSH session died
    assert bot.proc.wait(timeout=10) == 0
    assert procfs.status([[started["pid"], started["start"]]]) in ([None], ["zombie"])


def test_sizes_count_a_files_bytes_once_and_never_follow_a_link(tmp_path):
    from bench.infra.agent import files
    folder = tmp_path / "app"
    (folder / "lib").mkdir(parents=True)
    (folder / "lib" / "a.bin").write_bytes(b"x" * 3000)
    os.link(folder / "lib" / "a.bin", folder / "hard.bin")      # the same file again
    (folder / "b.txt").write_bytes(b"y" * 500)
    outside = tmp_path / "big"
    outside.write_bytes(b"z" * 100_000)
    os.symlink(outside, folder / "link")                        # its target is not counted
    found = files.sizes([str(folder), str(folder / "b.txt"), str(tmp_path / "missing")])
    assert found[str(folder / "b.txt")] == 500 and found[str(tmp_path / "missing")] is None
    assert 3500 < found[str(folder)] < 3500 + 200                # + the link's own few bytes
