from pathlib import Path

import pytest

from bench import cli
from bench.cli import arguments
from bench.core import manifest, plan as config, settings
from bench.core.settings import SelectionError, Settings

REPO = Path(__file__).resolve().parents[2]


def spec(tmp_path, sid, databases=("postgres", "mysql"), orm=(False, True)):
    folder = tmp_path / sid
    folder.mkdir()
    (folder / "manifest.toml").write_text(
        f'id = "{sid}"\nconcurrency = "processes"\ndatabases = {list(databases)!r}\n'
        f'orm = {str(list(orm)).lower()}\nstart = ["{{python}}", "app.py", "{{port}}"]\n'
        .replace("'", '"'))
    return manifest.load_manifest(folder)


def test_every_real_manifest_loads():
    specs = manifest.discover()
    assert specs, "no servers found"
    for s in specs.values():
        # a framework has database variants; a reference server answers only without one
        assert bool(s.variants()) != s.reference, s.id
    assert [s.id for s in specs.values() if s.reference] == ["nginx"]


def test_the_ceiling_joins_every_run_of_frameworks_for_the_no_db_tests_only(tmp_path):
    ref = spec(tmp_path, "ref", databases=[])
    specs = {"a": spec(tmp_path, "a"), "ref": ref}
    object.__setattr__(ref, "reference", True)
    ids = [c.id for c in config.plan(Settings(behind=["none", "nginx"], rates=["50%"]), specs,
                                     proxies=["nginx"])]
    assert [i for i in ids if i.startswith("ref/")] == ["ref/none/raw/plain@c64",
                                                        "ref/none/raw/to_json@c64"]
    assert not [i for i in config.plan(Settings(ceiling=False), specs) if
                i.variant.server.reference]
    named = config.plan(Settings(servers=["ref"], ceiling=False), specs)
    assert [c.id for c in named] == ["ref/none/raw/plain@c64", "ref/none/raw/to_json@c64"]


def test_plan_runs_db_tests_per_variant_and_no_db_tests_once(tmp_path):
    specs = {"a": spec(tmp_path, "a"), "b": spec(tmp_path, "b", orm=(True,))}
    cases = config.plan(Settings(), specs)
    ids = [c.id for c in cases]
    assert len([i for i in ids if i.startswith("a/")]) == 4 * 2 + 2
    assert len([i for i in ids if i.startswith("b/")]) == 2 * 2 + 2
    assert "a/none/raw/plain@c64" in ids and "b/postgres/orm/update_user@c64" in ids


def test_plan_honours_the_selection(tmp_path):
    specs = {"a": spec(tmp_path, "a")}
    s = Settings(databases=["mysql"], orm="raw", tests=["get user", "plain"])
    assert [c.id for c in config.plan(s, specs)] == ["a/mysql/raw/get_user@c64",
                                                       "a/none/raw/plain@c64"]


@pytest.mark.parametrize("field,value,message", [
    ("servers", ["nope"], "unknown server 'nope'; valid: a"),
    ("databases", ["oracle"], "unknown database 'oracle'; valid: postgres, mysql"),
    ("tests", ["get users"], "unknown test 'get users'; valid: get user, update user"),
])
def test_unknown_names_list_the_valid_ones(tmp_path, field, value, message):
    s = Settings(**{field: value})
    with pytest.raises(SelectionError, match=message):
        config.plan(s, {"a": spec(tmp_path, "a")})


def test_pool_is_the_budget_split_over_processes(tmp_path):
    s = spec(tmp_path, "a")
    assert s.pool_size(budget=32, workers=8) == 4
    assert s.budget(32, 8).as_dict() == {"total": 32, "processes": 8, "per_process": 4}
    threads = manifest.ServerSpec(**{**s.__dict__, "concurrency": "threads"})
    assert threads.pool_size(budget=32, workers=8) == 32
    assert threads.budget(5, 8).per_process == 5      # one process: any budget splits


@pytest.mark.parametrize("budget,workers,message", [
    (30, 8, r"does not split evenly over a's 8 worker processes \(3 each would open only "
            r"24\): use a multiple of 8, such as 24 or 32"),
    (32, 10, r"3 each would open only 30\): use a multiple of 10, such as 30 or 40"),
    (4, 8, r"--db-connections 4 is less than a's 8 worker processes"),
])
def test_a_budget_that_does_not_split_exactly_is_refused(tmp_path, budget, workers, message):
    specs = {"a": spec(tmp_path, "a")}
    with pytest.raises(manifest.BudgetError, match=message):
        specs["a"].budget(budget, workers)
    with pytest.raises(SelectionError, match=message):
        config.plan(Settings(db_connections=budget, workers=workers), specs)
    # without a database there is no pool to split: plain and to json still run
    cases = config.plan(Settings(db_connections=budget, workers=workers, databases=[]), specs)
    assert {c.variant.database for c in cases} == {"none"}


def test_the_worker_check_is_read_from_the_manifest(tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    base = 'id = "w"\ndatabases = []\nstart = ["x"]\n'
    (folder / "manifest.toml").write_text(base + 'concurrency = "processes"\n')
    assert manifest.load_manifest(folder).worker_check.count == "processes"
    (folder / "manifest.toml").write_text(base + 'concurrency = "threads"\n')
    with pytest.raises(manifest.ManifestError, match="needs 'match'"):
        manifest.load_manifest(folder)
    (folder / "manifest.toml").write_text(base + 'concurrency = "threads"\n[workers]\ncount = "none"\n')
    with pytest.raises(manifest.ManifestError, match="needs a 'reason'"):
        manifest.load_manifest(folder)
    (folder / "manifest.toml").write_text(
        base + 'concurrency = "threads"\n[workers]\ncount = "threads"\nmatch = "^w-[0-9]+$"\n')
    assert manifest.load_manifest(folder).worker_check.match == "^w-[0-9]+$"


def test_every_real_manifest_says_how_to_count_its_workers():
    for s in manifest.discover().values():
        check = s.worker_check
        assert check.count in ("processes", "threads", "none"), s.id
        assert check.count != "none" or len(check.reason) > 40, s.id


def test_every_real_manifest_says_what_runs_and_how_it_is_counted():
    """`artefacts` (the build record's size): a server that builds names what it runs,
    in placeholders the harness knows, and its notes say how shared code is counted."""
    from bench.core.settings import Settings
    from bench.infra.server import needs_build, template_values
    for s in manifest.discover().values():
        assert len(s.notes.get("artefacts", "")) > 60, s.id
        assert bool(s.artefacts) == needs_build(s), s.id
        values = template_values(s, Settings(), "none")
        assert all(manifest.expand(a, values).startswith("/") for a in s.artefacts), s.id


def test_manifest_errors_are_clear(tmp_path):
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "manifest.toml").write_text('id = "y"\n')
    with pytest.raises(manifest.ManifestError, match="must equal the folder name"):
        manifest.load_manifest(folder)
    with pytest.raises(manifest.ManifestError, match="unknown placeholder 'nope'"):
        manifest.expand("{nope}", {"port": "1"})


def test_case_key_has_room_for_load_parameters(tmp_path):
    case = config.plan(Settings(connections=16), {"a": spec(tmp_path, "a")})[0]
    assert case.key() == {"server": "a", "database": "postgres", "orm": False,
                          "test": "get user", "connections": 16,
                          "connection_mode": "keep-alive", "generator": "wrk",
                          "proxy": "none", "rate": None}
    close = config.Case(case.variant, case.test, config.LoadParams(16, "close"))
    assert close.id == "a/postgres/raw/get_user@c16@close" and close.id != case.id
    behind = config.Case(case.variant, case.test,
                         config.LoadParams(16, "keep-alive", "oha", "nginx", "50%"))
    assert behind.id == "a/postgres/raw/get_user@c16@behind-nginx@oha@r50%"


def test_modes_multiply_the_cases_and_rate_points_follow_the_closed_loop_ones(tmp_path):
    specs = {"a": spec(tmp_path, "a")}
    s = Settings(connection_levels=[16, 64], connection_modes=["keep-alive", "close"],
                 tests=["plain"], rates=["50%", "2000"])
    cases = config.plan(s, specs)
    closed = [c for c in cases if c.load.generator == "wrk"]
    assert sorted((c.load.connections, c.load.connection_mode) for c in closed) == \
        [(16, "close"), (16, "keep-alive"), (64, "close"), (64, "keep-alive")]
    assert len(cases) == 4 * 3 and len({c.id for c in cases}) == 12
    order = config.schedule(cases, repeat=2, seed=3)
    first_rate = next(i for i, smp in enumerate(order) if smp.case.load.rate is not None)
    assert all(smp.case.load.rate is None for smp in order[:first_rate])
    assert all(smp.case.load.rate is not None for smp in order[first_rate:])
    assert first_rate == 2 * 4


@pytest.mark.parametrize("change, message", [
    ({"connection_modes": ["keepalive"]}, "unknown connection mode 'keepalive'; valid: "
                                          "keep-alive, close"),
    ({"behind": ["haproxy"]}, "unknown --behind proxy 'haproxy'; valid: none, nginx"),
    ({"connection_levels": [16, 0]}, "--connections must be positive"),
    ({"connection_levels": [16, 16]}, "lists a value twice"),
    ({"rates": ["150%"]}, "from 1% to 100%"),
    ({"rates": ["fast"]}, "--rate 'fast'"),
    ({"server_cpus": "0-"}, "--server-cpus '0-' is not a CPU list"),
    ({"client_cpus": "4096"}, "--client-cpus 4096: CPU 4096 is not usable here; valid CPUs: "),
    ({"threads": 3, "connection_levels": [16, 64]}, "does not divide over --threads 3"),
])
def test_impossible_mode_settings_name_the_flag_and_the_choices(tmp_path, change, message):
    s = Settings(**change)
    with pytest.raises(config.SelectionError) as err:
        config.plan(s, {"a": spec(tmp_path, "a")}, proxies=["nginx"])
    assert message in str(err.value)


def test_cpu_lists_parse_and_print_back():
    assert settings.parse_cpu_list("0-2,5") == [0, 1, 2, 5]
    assert settings.format_cpu_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"


def test_schedule_interleaves_rounds_in_a_seeded_shuffle(tmp_path):
    cases = config.plan(Settings(), {"a": spec(tmp_path, "a")})
    order = config.schedule(cases, repeat=3, seed=7)
    assert len(order) == 3 * len(cases)
    for rnd in range(3):   # every round measures every case exactly once
        in_round = order[rnd * len(cases):(rnd + 1) * len(cases)]
        assert sorted(s.case.id for s in in_round) == sorted(c.id for c in cases)
        assert {s.index for s in in_round} == {rnd}
    assert [s.case.id for s in order] == [s.case.id for s in config.schedule(cases, 3, 7)]
    assert [s.case.id for s in order] != [s.case.id for s in config.schedule(cases, 3, 8)]
    rounds = [[s.case.id for s in order[r * len(cases):(r + 1) * len(cases)]] for r in range(3)]
    assert len({tuple(r) for r in rounds}) > 1, "rounds are reshuffled, not repeated"


@pytest.mark.parametrize("cpus,connections,expected", [
    (2, 64, 1), (8, 64, 4), (64, 64, 32), (256, 64, 64), (256, 48, 48), (12, 64, 4),
    (6, 10, 2), (1, 64, 1)])
def test_default_threads_fit_the_cpus_and_divide_the_connections(cpus, connections, expected):
    threads = settings.default_threads(connections, cpus)
    assert threads == expected
    assert connections % threads == 0 and threads <= connections


def test_usable_cpus_respects_affinity():
    import os
    assert 1 <= settings.usable_cpus() <= len(os.sched_getaffinity(0))


@pytest.mark.parametrize("kwargs,message", [
    ({"connections": 64, "threads": 3}, "does not divide over --threads 3: wrk would open "
                                        "only 63 connections. Use --threads 2, or --connections 66"),
    ({"connections": 4, "threads": 8}, "--threads 8 exceeds --connections 4"),
    ({"repeat": 0}, "--repeat must be positive"),
    ({"warmup": -1}, "--warmup must be 0 or more"),
    ({"error_threshold": 2.0}, "--error-threshold must be a percentage"),
    ({"port": 70000}, "--port must be a TCP port"),
    ({"token": "a b"}, "--token must be a non-empty string"),
])
def test_impossible_settings_are_refused_naming_the_flag(tmp_path, kwargs, message):
    with pytest.raises(SelectionError, match=message.replace("(", r"\(")):
        config.plan(Settings(**kwargs), {"a": spec(tmp_path, "a")})


def test_presets_set_four_settings_and_explicit_flags_override():
    args = cli.parser().parse_args(["run", "--preset", "nightly", "--duration", "7"])
    s = arguments.settings_from(args)
    nightly = settings.PRESETS["nightly"]
    assert (s.preset, s.repeat, s.warmup, s.connections) == \
        ("nightly", nightly.repeat, nightly.warmup, nightly.connections)
    assert s.duration == 7
    default = arguments.settings_from(cli.parser().parse_args(["run"]))
    assert (default.preset, default.repeat) == ("default", settings.PRESETS["default"].repeat)
    quick = arguments.settings_from(cli.parser().parse_args(["run", "--quick"]))
    assert quick.preset == "quick" and quick.duration == settings.PRESETS["quick"].duration


def test_help_says_what_each_preset_sets(capsys):
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["run", "--help"])
    # argparse may wrap a line after a hyphen ("warm-\nup")
    text = " ".join(capsys.readouterr().out.split()).replace("warm- up", "warm-up")
    for p in settings.PRESETS.values():
        assert f"{p.name}: {p.repeat} x {p.duration:g} s samples after {p.warmup:g} s warm-up, " \
               f"{p.connections} connections" in text
