"""One session for every command: hosts -> preflight -> databases -> builds -> teardown,
driven here on fake hosts and a fake database provider (no process is started), and
`--hosts` accepted by each of the five commands and handed to the session."""
from __future__ import annotations

import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import cli, session as session_package
from bench.core import manifest
from bench.core.context import DatabaseSource, ServerLaunch
from bench.core.plan import Case, LoadParams, Variant
from bench.core.settings import Settings
from bench.infra import databases, db, state
from bench.infra.host import LOCAL
from bench.infra.hosts import Hosts, HostSpec
from bench.session import FOR_BUILD, FOR_RUN, FOR_VERIFY, PreflightError, Session
from bench.session import preflight

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "servers"


class RecordingHost:
    """The part of the Host protocol the session and the preflight use, answered from
    memory and recorded (bench.infra.fake.RecordingHost runs whole processes' lives; these
    tests need only tools, ports, builds, pins and closing)."""
    remote = False

    def __init__(self, name: str, tools=("wrk", "oha", "taskset"), busy_ports=(),
                 build_exit: int = 0):
        self.name, self.tools, self.busy = name, set(tools), set(busy_ports)
        self.build_exit = build_exit
        self.commands: list[list[str]] = []
        self.pinned: list[tuple[int, list[int]]] = []
        self.closed = False

    def which(self, tool):
        return f"/usr/bin/{tool}" if tool in self.tools else None

    def machine(self):
        return {"cpus_usable": 2}

    def port_is_free(self, port, address="127.0.0.1"):
        return port not in self.busy

    def project_path(self, path):
        return str(path)

    def cache_dir(self):
        return "/cache"

    def run(self, argv, cwd=None, timeout=None, stop_signal=None, env=None):
        if argv[0] == "git":    # its checkout is this one (project_path): pinned to it
            return LOCAL.run(argv, timeout=timeout)
        self.commands.append(list(argv))
        code = 0 if argv[0] == "test" else self.build_exit
        return SimpleNamespace(returncode=code, stdout="built\n", stderr="", timed_out=False,
                               wall_s=1.234)

    def pin(self, pid, cpus):
        self.pinned.append((pid, cpus))

    def connect(self):
        pass

    def close(self):
        self.closed = True
        return f"{self.name}: a process group did not stop" if "leaves" in self.name else None


class RecordingHosts(Hosts):
    """Roles on fake hosts; `remote` roles count as other machines (with their specs)."""

    def __init__(self, hosts: dict[str, RecordingHost], remote: dict[str, str] | None = None,
                 mode: str | None = None):
        super().__init__({role: HostSpec(role, address, mode=mode if role == "database" else None)
                          for role, address in (remote or {}).items()})
        self.fakes = hosts
        self.opened = False

    def for_role(self, role):
        return self.fakes[role]

    def remote_hosts(self):
        return list({id(h): h for h in self.fakes.values()}.values())

    def open(self):
        self.opened = True
        return self

    def close(self):
        for host in self.remote_hosts():
            problem = host.close()
            if problem:
                self.close_problems.append(problem)
        return self.close_problems


def all_on(host: RecordingHost, **kwargs) -> RecordingHosts:
    return RecordingHosts({role: host for role in ("client", "server", "database")}, **kwargs)


def spec(tmp_path, sid="a", build='["make", "{port}"]', requires="[]"):
    folder = tmp_path / sid
    folder.mkdir()
    (folder / "manifest.toml").write_text(
        f'id = "{sid}"\nconcurrency = "processes"\ndatabases = ["postgres", "mysql"]\n'
        f'orm = [false]\nstart = ["x"]\nbuild = {build}\nrequires = {requires}\n')
    return manifest.load_manifest(folder)


def cases_of(server, databases=("postgres",), proxy="none"):
    return [Case(Variant(server, d, False), "get user", LoadParams(64, proxy=proxy))
            for d in databases]


class FakeProvider:
    mode = "local"

    def __init__(self, source, engines, host, listen_address, mode):
        self.source, self.engines, self.host = source, engines, host
        self.listen_address, self.mode_asked = listen_address, mode
        self.up = set()
        self.restarts = 0
        self.stopped = False

    def start(self):
        self.up = set(self.engines)
        return {e: db.Endpoint(e, self.listen_address, 1000 + i, "u", "p")
                for i, e in enumerate(self.engines)}

    def alive(self, engine):
        return engine in self.up

    def restart(self, engine):
        self.restarts += 1
        self.up.add(engine)
        return db.Endpoint(engine, self.listen_address, 2000, "u", "p")

    def pids(self, engine):
        return [10, 11] if engine in self.up else []

    def stop(self):
        self.stopped = True
        return ["kept /tmp/data: a process still uses it"]


@pytest.fixture
def providers(monkeypatch):
    made = []

    def for_settings(source, engines, *, host, listen_address, mode):
        made.append(FakeProvider(source, engines, host, listen_address, mode))
        return made[-1]
    monkeypatch.setattr(databases, "for_settings", for_settings)
    # the providers are fakes: whether this machine has Docker and compose is not asked
    monkeypatch.setattr(preflight, "docker_problems", lambda hosts: [])
    return made


class Said:
    def __init__(self):
        self.lines = []

    def step(self, text):
        self.lines.append(("step", text))

    def note(self, text):
        self.lines.append(("note", text))

    def error(self, text):
        self.lines.append(("error", text))


def test_preflight_problems_stop_the_session_and_close_the_hosts(tmp_path):
    host = RecordingHost("here", tools=(), busy_ports={18080})
    hosts = all_on(host)
    server = spec(tmp_path, requires='["nginx"]')
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(PreflightError) as caught:
        with Session(Settings(results_dir=tmp_path), cases_of(server), hosts=hosts,
                     display=Said()):
            pytest.fail("entered despite the preflight's problems")
    said = " | ".join(caught.value.problems)
    assert "wrk" in said and "nginx is not installed" in said and "port 18080" in said
    assert hosts.opened and host.closed
    # the SIGTERM handler the session installed is gone again
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_proxy_in_front_needs_its_program_before_anything_starts(tmp_path):
    """--behind haproxy,caddy: each proxy folder's `requires` is checked with the tools,
    naming the proxy that needs it; a direct case needs none of them."""
    host = RecordingHost("here", tools=("wrk",))
    server = spec(tmp_path)
    ctx = Session(Settings(results_dir=tmp_path), hosts=all_on(host)).context
    behind = cases_of(server) + cases_of(server, proxy="haproxy") + cases_of(server, proxy="caddy")
    needed = preflight.tools_needed(ctx, behind, FOR_RUN)
    assert needed["haproxy"] == "--behind haproxy" and needed["caddy"] == "--behind caddy"
    assert "haproxy" not in preflight.tools_needed(ctx, cases_of(server), FOR_RUN)
    said = " | ".join(preflight.problems(ctx, behind, all_on(host), FOR_RUN))
    assert "haproxy is not installed" in said and "(needed for --behind haproxy)" in said
    assert "caddy is not installed" in said


def test_what_is_checked_depends_on_the_command(tmp_path):
    host = RecordingHost("here", tools=(), busy_ports={18080})
    server = spec(tmp_path)
    ctx = Session(Settings(results_dir=tmp_path), hosts=all_on(host)).context
    cases = cases_of(server)
    assert "wrk" in preflight.tools_needed(ctx, cases, FOR_RUN)
    assert "wrk" not in preflight.tools_needed(ctx, cases, FOR_VERIFY)
    assert 18080 in preflight.ports_needed(ctx, cases, needs=FOR_VERIFY)
    assert preflight.problems(ctx, cases, all_on(host), FOR_BUILD) == []


def test_the_server_address_comes_from_hosts_and_reaches_the_launch_and_the_preflight(tmp_path):
    host = RecordingHost("there")
    hosts = all_on(host, remote={"server": "10.0.0.3"})
    s = Settings(results_dir=tmp_path)
    opened = Session(s, hosts=hosts, display=Said())
    assert opened.launch.host == "10.0.0.3" and opened.context.server_address == "10.0.0.3"
    assert s.host == "127.0.0.1"
    checked = []
    host.port_is_free = lambda port, address="127.0.0.1": checked.append((port, address)) or True
    with opened:
        pass
    assert (18080, "10.0.0.3") in checked


def test_databases_start_on_the_database_host_pinned_and_are_restarted_and_stopped(
        tmp_path, providers):
    here, db_host = RecordingHost("here"), RecordingHost("db")
    hosts = RecordingHosts({"client": here, "server": here, "database": db_host},
                      remote={"database": "10.0.0.4"}, mode="docker")
    said = Said()
    s = Settings(results_dir=tmp_path, db_cpus="1", db_mode="local", pg_port=15000)
    with Session(s, cases_of(spec(tmp_path), ("postgres", "mysql")), hosts=hosts,
                 display=said) as opened:
        endpoints = opened.start_databases()
        provider = providers[0]
        assert sorted(endpoints) == ["mysql", "postgres"]
        assert provider.source == DatabaseSource("local", 15000, 13306, None, None, False)
        assert (provider.host, provider.listen_address, provider.mode_asked) == \
            (db_host, "10.0.0.4", "docker")
        assert ("step", "databases (local): starting postgres, mysql") in said.lines
        assert db_host.pinned == [(10, [1]), (11, [1])] * 2
        assert opened.alive("postgres") and not opened.alive("none")
        provider.up.discard("postgres")                 # it died
        assert not opened.alive("postgres")
        assert opened.restart("postgres").port == 2000 and opened.endpoints["postgres"].port == 2000
        assert provider.restarts == 1 and len(db_host.pinned) == 8     # every engine again
        with pytest.raises(RuntimeError, match="already started"):
            opened.start_databases()
        assert opened.stop_databases() == ["kept /tmp/data: a process still uses it"]
        assert provider.stopped and opened.provider is None and opened.stop_databases() == []
    assert opened.cleanup_problems == []      # the caller took the databases' problems


def test_leaving_stops_the_databases_closes_the_hosts_and_says_what_was_left(
        tmp_path, providers):
    host = RecordingHost("here leaves")
    said = Said()
    before = signal.getsignal(signal.SIGTERM)
    with Session(Settings(results_dir=tmp_path), cases_of(spec(tmp_path)), hosts=all_on(host),
                 display=said) as opened:
        assert signal.getsignal(signal.SIGTERM) != before     # SIGTERM stops it as Ctrl-C does
        opened.start_databases()
    assert signal.getsignal(signal.SIGTERM) == before
    assert providers[0].stopped and host.closed
    assert opened.cleanup_problems == ["kept /tmp/data: a process still uses it",
                                       "here leaves: a process group did not stop"]
    assert [t for kind, t in said.lines if kind == "error"] == opened.cleanup_problems
    assert opened.close() == opened.cleanup_problems          # once only


def test_each_server_builds_once_per_session_on_the_server_host(tmp_path):
    host = RecordingHost("here")
    a, b, none = spec(tmp_path, "a"), spec(tmp_path, "b"), spec(tmp_path, "c", build="[]")
    said = Said()
    with Session(Settings(results_dir=tmp_path, port=19000), hosts=all_on(host),
                 needs=FOR_BUILD, display=said) as opened:
        first = dict(opened.builds([a, b, none], tmp_path / "logs"))
        again = dict(opened.builds([a], tmp_path / "logs"))
    assert sorted(first) == ["a", "b"] and again == {"a": first["a"]}
    assert first["a"].record.to_json() == {"ok": True, "seconds": 1.23, "error": None}
    # the build runs with the launch's values, once per server
    assert [c for c in host.commands if c[0] == "make"] == [["make", "19000"]] * 2
    assert (tmp_path / "logs" / "build-a.log").read_text().startswith("$ make 19000")
    assert ("note", "built a in 1.2 s") in said.lines


def test_a_failed_build_is_a_record_and_the_others_still_build(tmp_path):
    host = RecordingHost("here", build_exit=2)
    said = Said()
    with Session(Settings(results_dir=tmp_path), hosts=all_on(host), needs=FOR_BUILD,
                 display=said) as opened:
        built = dict(opened.builds([spec(tmp_path, "a"), spec(tmp_path, "b")], tmp_path))
    assert [r.ok for r in built.values()] == [False, False]
    assert built["a"].reason.startswith("build of a failed (exit 2)")
    assert built["a"].record.error.startswith("build of a failed (exit 2)")
    assert len([1 for kind, _ in said.lines if kind == "error"]) == 2


# ---------------------------------------------------------------- --hosts on every command
@pytest.fixture
def reached(monkeypatch):
    """Each command's session, stopped at its preflight: what it was given."""
    seen = []

    def enter(self):
        seen.append(self)
        raise PreflightError(["stopped by the test"])
    monkeypatch.setattr(Session, "__enter__", enter)
    # no state file and no reaping of other harnesses' leftovers from a unit test
    monkeypatch.setattr(cli, "clean_up_after_dead_runs", lambda: None)
    monkeypatch.setattr(state, "activate", lambda *a: None)
    return seen


@pytest.mark.parametrize("argv", [
    ["run", "--servers", "correct_processes", "--tests", "plain", "--no-ceiling"],
    ["calibrate", "--servers", "correct_processes", "--tests", "plain"],
    ["verify", "--servers", "correct_processes", "--tests", "plain"],
    ["serve", "correct_processes", "--db", "none"],
    ["build", "--servers", "correct_processes"],
], ids=lambda argv: argv[0])
def test_every_command_accepts_hosts_and_hands_them_to_its_session(argv, reached, tmp_path,
                                                                   capsys):
    hosts = tmp_path / "hosts.toml"
    hosts.write_text('[server]\naddress = "10.0.0.3"\n')
    code = cli.main([*argv, "--servers-dir", str(FIXTURES), "--hosts", str(hosts),
                     *(["--results-dir", str(tmp_path)] if argv[0] not in ("serve", "build")
                       else [])])
    assert code == 1 and "error: stopped by the test" in capsys.readouterr().err
    assert len(reached) == 1
    opened = reached[0]
    assert opened.hosts.source == hosts and opened.hosts.is_remote("server")
    assert isinstance(opened.launch, ServerLaunch) and opened.launch.host == "10.0.0.3"
    expected = {"run": FOR_RUN, "calibrate": FOR_RUN, "verify": FOR_VERIFY,
                "serve": session_package.FOR_SERVE, "build": FOR_BUILD}[argv[0]]
    assert opened.needs == expected
    if argv[0] != "build":
        assert "correct_processes" in {c.variant.server.id for c in opened.cases}


def test_a_bad_hosts_file_is_bad_input_for_every_command(tmp_path, capsys, reached):
    for command in ("verify", "build"):
        code = cli.main([command, "--hosts", str(tmp_path / "absent.toml")])
        assert code == 2 and "absent.toml: no such hosts file" in capsys.readouterr().err
    assert not reached
