from pathlib import Path

import pytest

from bench import config, manifest

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
        assert s.variants(), s.id


def test_plan_runs_db_tests_per_variant_and_no_db_tests_once(tmp_path):
    specs = {"a": spec(tmp_path, "a"), "b": spec(tmp_path, "b", orm=(True,))}
    cases = config.plan(config.Settings(), specs)
    ids = [c.id for c in cases]
    assert len([i for i in ids if i.startswith("a/")]) == 4 * 2 + 2
    assert len([i for i in ids if i.startswith("b/")]) == 2 * 2 + 2
    assert "a/none/raw/plain" in ids and "b/postgres/orm/update_user" in ids


def test_plan_honours_the_selection(tmp_path):
    specs = {"a": spec(tmp_path, "a")}
    s = config.Settings(databases=["mysql"], orm="raw", tests=["get user", "plain"])
    assert [c.id for c in config.plan(s, specs)] == ["a/mysql/raw/get_user", "a/none/raw/plain"]


@pytest.mark.parametrize("field,value,message", [
    ("servers", ["nope"], "unknown server 'nope'; valid: a"),
    ("databases", ["oracle"], "unknown database 'oracle'; valid: postgres, mysql"),
    ("tests", ["get users"], "unknown test 'get users'; valid: get user, update user"),
])
def test_unknown_names_list_the_valid_ones(tmp_path, field, value, message):
    s = config.Settings(**{field: value})
    with pytest.raises(config.SelectionError, match=message):
        config.plan(s, {"a": spec(tmp_path, "a")})


def test_pool_is_the_budget_split_over_processes(tmp_path):
    s = spec(tmp_path, "a")
    assert s.pool_size(budget=32, workers=8) == 4
    threads = manifest.ServerSpec(**{**s.__dict__, "concurrency": "threads"})
    assert threads.pool_size(budget=32, workers=8) == 32


def test_manifest_errors_are_clear(tmp_path):
    folder = tmp_path / "x"
    folder.mkdir()
    (folder / "manifest.toml").write_text('id = "y"\n')
    with pytest.raises(manifest.ManifestError, match="must equal the folder name"):
        manifest.load_manifest(folder)
    with pytest.raises(manifest.ManifestError, match="unknown placeholder 'nope'"):
        manifest.expand("{nope}", {"port": "1"})
