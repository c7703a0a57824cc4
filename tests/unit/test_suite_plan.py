"""The database suite's pieces that need no server: a manifest's [suite] declaration,
the statements it allows, the n levels as cases, and the rules of selecting them."""
from __future__ import annotations

from pathlib import Path

import pytest

from bench.core import suite
from bench.core.manifest import ManifestError, load_manifest
from bench.core.plan import plan
from bench.core.settings import SelectionError, Settings
from bench.verify.suite_counts import explain, rules


def write(tmp_path: Path, name: str, extra: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "manifest.toml").write_text(
        f'id = "{name}"\nconcurrency = "threads"\ndatabases = ["postgres", "mysql"]\n'
        f'orm = [false, true]\nstart = ["x"]\n[workers]\ncount = "none"\nreason = "r"\n'
        + extra)
    return folder


def test_a_declaration_resolves_per_variant_later_scopes_winning(tmp_path):
    spec = load_manifest(write(tmp_path, "s", '[suite]\ntemplate = "t"\ncache = "c"\n'
                                              '[suite.orm]\nupdates = "batched"\n'
                                              'update_batch = 8\ntransaction = true\n'
                                              '[suite.mysql-orm]\nupdate_batch = 0\n'))
    raw = spec.declaration("postgres", False)
    assert (raw.updates, raw.transaction, raw.template) == ("per-row", False, "t")
    assert raw.update_statements(20) == 20
    pg_orm, my_orm = spec.declaration("postgres", True), spec.declaration("mysql", True)
    assert pg_orm.update_statements(20) == 3 and pg_orm.update_statements(8) == 1
    assert my_orm.update_statements(20) == 1            # 0: all rows in one statement
    assert my_orm.describe() == "batched (all rows per UPDATE), in a transaction"
    assert rules("updates", 20, pg_orm) == ({"select": (20, 20), "update": (3, 3)}, 2)
    assert rules("updates", 20, raw) == ({"select": (20, 20), "update": (20, 20)}, 0)
    assert rules("queries", 7, raw)[0] == {"select": (7, 7), "update": (0, 0)}
    assert load_manifest(write(tmp_path, "none", "")).suite is None


@pytest.mark.parametrize("table, message", [
    ('updates = "sometimes"', "updates must be one of per-row, batched"),
    ("update_batch = -1", "update_batch must be 0"),
    ('pipelining = "no"', "pipelining must be a bool"),
    ("colour = 1", "unknown key 'colour'"),
    ("raw = 1", "[suite].raw must be a table"),
])
def test_a_wrong_declaration_is_a_manifest_error(tmp_path, table, message):
    with pytest.raises(ManifestError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_manifest(write(tmp_path, "bad", f"[suite]\n{table}\n"))


def test_the_hint_names_an_in_list_and_an_undeclared_batch():
    decl = suite.Declaration()
    assert any("IN (...)" in e for e in explain("queries", ["does 1 SELECT ... contract requires 20"], decl))
    assert any("does not declare" in e for e in explain(
        "updates", ["does 1 UPDATE per updates n=20, contract requires 20"], decl))
    assert explain("fortunes", ["x"], decl) == ["x"]


class _Spec:
    def __init__(self, sid, with_suite=True, reference=False):
        self.id = self.label = sid
        self.databases = () if reference else ("postgres",)
        self.orm = (False,)
        self.reference = reference
        self.suite = {("postgres", False): suite.Declaration()} if with_suite else None

    def variants(self):
        return [(d, o) for d in self.databases for o in self.orm]

    def budget(self, total, workers):
        return None


def test_n_levels_are_cases_and_a_server_without_the_suite_is_left_out():
    specs = {"a": _Spec("a"), "b": _Spec("b", with_suite=False)}
    cases = plan(Settings(tests=("queries", "fortunes", "get user"), n_levels=(1, 20),
                          ceiling=False), specs)
    ids = sorted(c.id for c in cases)
    assert ids == ["a/postgres/raw/fortunes@c64", "a/postgres/raw/get_user@c64",
                   "a/postgres/raw/queries_n1@c64", "a/postgres/raw/queries_n20@c64",
                   "b/postgres/raw/get_user@c64"]
    by_id = {c.id: c for c in cases}
    assert by_id["a/postgres/raw/queries_n20@c64"].key()["n"] == 20
    assert "n" not in by_id["a/postgres/raw/fortunes@c64"].key()
    assert by_id["a/postgres/raw/queries_n20@c64"].title == "queries n=20"
    defaults = plan(Settings(tests=("cached", "updates"), ceiling=False), {"a": specs["a"]})
    assert sorted(c.n for c in defaults) == [suite.DEFAULT_N["updates"], suite.DEFAULT_N["cached"]]


@pytest.mark.parametrize("settings, message", [
    (Settings(servers=("b",), tests=("queries",)), "b implement.* no database suite"),
    (Settings(tests=("plain",), n_levels=(5,)), "--n applies to queries, updates, cached"),
    (Settings(tests=("queries",), n_levels=(0,)), "--n 0: n is 1 to 500"),
    (Settings(tests=("queries",), n_levels=(3, 3)), "--n lists a value twice"),
    (Settings(tests=("querys",)), "unknown test 'querys'"),
])
def test_impossible_suite_selections_are_refused(settings, message):
    specs = {"a": _Spec("a"), "b": _Spec("b", with_suite=False)}
    with pytest.raises(SelectionError, match=message):
        plan(settings, specs)


def test_tests_all_and_the_suite_preset_select_all_eight():
    from bench.cli.arguments import expand_tests
    assert expand_tests(["all"]) == list(Settings().with_preset("suite").tests)
    assert len(expand_tests(["all"])) == 8 and Settings().with_preset("suite").with_suite
    assert not Settings().with_suite


def test_a_cache_that_never_filled_says_why_and_one_that_filled_says_nothing():
    from bench.runner.cache import not_filled
    assert not_filled(None) is None
    assert not_filled({"full": True, "selects": [900, 0], "rounds": 2, "n": 100}) is None
    assert not_filled({"full": None, "selects": None, "rounds": 10, "n": 100}) is None
    why = not_filled({"full": False, "selects": [3000, 2900], "rounds": 60, "n": 100})
    assert "2900 SELECTs in the last of 60 rounds of /cached/?n=100" in why


def test_raw_else_orm_takes_one_variant_per_server_and_engine(tmp_path):
    both = load_manifest(write(tmp_path, "both", ""))           # raw and ORM
    orm_only = tmp_path / "ormonly"
    orm_only.mkdir()
    (orm_only / "manifest.toml").write_text(
        (tmp_path / "both" / "manifest.toml").read_text()
        .replace('id = "both"', 'id = "ormonly"').replace("orm = [false, true]", "orm = [true]"))
    specs = {"both": both, "ormonly": load_manifest(orm_only)}
    settings = Settings(tests=("get user",), databases=("postgres",), orm="raw-else-orm")
    chosen = {(c.variant.server.id, c.variant.orm) for c in plan(settings, specs)}
    assert chosen == {("both", False), ("ormonly", True)}
