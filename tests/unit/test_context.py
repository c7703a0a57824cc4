"""Settings are frozen; what a run resolves sits beside them (RunContext), and each
consumer gets a narrow value derived from both once."""
import dataclasses
from pathlib import Path

import pytest

from bench import cli
from bench.cli import arguments
from bench.core import settings as config
from bench.core.context import DatabaseSource, LoadPlan, Placement, RunContext, Selection, \
    ServerLaunch
from bench.core.settings import Settings, from_public
from bench.paths import REPO

# what results.json has always recorded for the default settings (results_dir and
# servers_dirs are this checkout's)
DEFAULT_PUBLIC = {
    "servers": [], "databases": ["postgres", "mysql"], "orm": "both",
    "tests": ["get user", "update user", "plain", "to json"], "preset": "default",
    "duration": 5.0, "warmup": 2.0, "repeat": 3, "connections": 64, "threads": 1,
    "connection_levels": [64], "connection_modes": ["keep-alive"], "n_levels": None, "runtime_threads": "cpus", "server_env": [], "deps": [],
    "behind": ["none"],
    "ceiling": True, "server_cpus": None, "client_cpus": None, "db_cpus": None, "rates": [],
    "knee_p99_ms": 20.0, "burst": 0.0, "workers": 8, "db_connections": 64, "timeout": 5.0,
    "seed": 1, "order_seed": None, "token": "(default)", "host": "127.0.0.1", "port": 18080,
    "error_threshold": 0.001, "unstable_cv": 0.1, "foreign_cpu_limit": 0.05,
    "strict": False, "verify": True, "db_mode": "auto",
    "pg_port": 15432, "mysql_port": 13306, "postgres_dsn": False, "mysql_dsn": False,
    "keep_db": False, "db_images": "auto", "results_dir": str(REPO / "results"),
    "servers_dirs": [str(REPO / "servers")], "threads_requested": None}


def test_settings_cannot_change_after_parsing():
    s = Settings(servers=["a"], tests=["plain"])
    for name, value in (("host", "10.0.0.3"), ("order_seed", 7), ("port", 1)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(s, name, value)
    # lists given by a caller are frozen on construction
    assert s.servers == ("a",) and s.tests == ("plain",)
    assert isinstance(Settings().servers_dirs, tuple) and hash(s)


def test_public_records_what_it_always_recorded(monkeypatch):
    monkeypatch.setattr(config, "default_threads", lambda connections, cpus=None: 1)
    public = Settings().public()
    assert public == DEFAULT_PUBLIC
    assert list(public) == list(DEFAULT_PUBLIC)           # the key order too
    swept = Settings(connection_levels=[16, 64], server_cpus="0", rates=["50%"],
                     behind=["none", "nginx"], postgres_dsn="postgresql://x", token="t").public()
    assert (swept["connection_levels"], swept["server_cpus"], swept["rates"], swept["behind"],
            swept["postgres_dsn"], swept["token"]) == \
        ([16, 64], [0], ["50%"], ["none", "nginx"], True, "(custom)")


def test_stored_settings_give_back_the_same_settings():
    s = Settings(servers=["a"], connection_levels=[16, 64], client_cpus="0-1", threads=2,
                 order_seed=5, token="secret", postgres_dsn="postgresql://x")
    back = from_public(s.public(), token="secret", postgres_dsn="postgresql://x")
    assert back == s and back.public() == s.public()


def test_a_preset_and_explicit_flags_build_a_new_object():
    base = Settings()
    nightly = base.with_preset("nightly")
    assert base.preset == "default" and nightly.preset == "nightly"
    assert nightly.repeat == config.PRESETS["nightly"].repeat
    with pytest.raises(config.SelectionError, match="unknown --preset 'x'"):
        base.with_preset("x")
    s = arguments.settings_from(cli.parser().parse_args(
        ["run", "--connections", "16,64", "--tests", "get_user", "--error-threshold", "2"]))
    assert (s.connections, s.connection_levels, s.tests, s.error_threshold) == \
        (16, (16, 64), ("get user",), 0.02)


def test_narrow_values_are_derived_from_the_settings():
    s = Settings(servers=["a"], databases=["mysql"], connection_levels=[16, 64], threads=None,
                 server_cpus="0", client_cpus="1", port=19000, workers=2, db_connections=4,
                 db_mode="local", pg_port=15000, keep_db=True, ceiling=False)
    ctx = RunContext.of(s)
    assert ctx.selection == Selection(("a",), ("mysql",), "both", s.tests, s.servers_dirs, False)
    assert isinstance(ctx.load, LoadPlan) and ctx.load.levels == (16, 64)
    assert ctx.load.threads_for(16) == s.threads_for(16)
    assert ctx.launch == ServerLaunch("127.0.0.1", 19000, s.token, 2, 4, (0,))
    assert ctx.launch.upstream_port == 19001 and ctx.launch.cpus("server") == [0]
    with pytest.raises(ValueError, match="server's CPUs only"):
        ctx.launch.cpus("client")
    assert ctx.placement == Placement((0,), (1,), None) and ctx.placement.pinned
    assert [ctx.placement.cpus(side) for side in ("server", "client", "db")] == \
        [s.cpus("server"), s.cpus("client"), s.cpus("db")]
    assert ctx.databases == DatabaseSource("local", 15000, 13306, None, None, True)
    # a server behind a proxy: a launch with the other port, the settings untouched
    upstream = dataclasses.replace(ctx.launch, port=ctx.launch.upstream_port)
    assert isinstance(upstream, ServerLaunch) and upstream.port == 19001 and s.port == 19000


def test_resolved_values_sit_beside_the_settings_and_are_what_results_record():
    s = Settings()
    ctx = RunContext.of(s, server_address="10.0.0.3").with_order_seed(42)
    assert (s.host, s.order_seed) == ("127.0.0.1", None)        # what was asked, kept
    assert ctx.launch.host == "10.0.0.3" and ctx.order_seed == 42
    public = ctx.public()
    assert (public["host"], public["order_seed"]) == ("10.0.0.3", 42)
    assert list(public) == list(s.public())
    assert {k: v for k, v in public.items() if k not in ("host", "order_seed")} == \
        {k: v for k, v in s.public().items() if k not in ("host", "order_seed")}
    assert RunContext.of(Settings(order_seed=3)).order_seed == 3


def test_core_imports_nothing_above_it():
    import ast
    for path in (Path(config.__file__).parent).glob("*.py"):
        tree = ast.parse(path.read_text())
        names = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
        names += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        above = [n for n in names if n.split(".")[:2] in (["bench", "infra"], ["bench", "runner"],
                                                           ["bench", "cli"], ["bench", "session"])]
        assert not above, (path.name, above)
