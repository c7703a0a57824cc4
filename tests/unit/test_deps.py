"""The release sweep (--dep) on numbers and files alone: parsing, which servers a
dependency applies to, the labels, the requirements an override makes, and the view
the tables and charts draw (bench.report.releases); the dependency changes compare, ab
and history name (bench.analysis.comparability)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.analysis.comparability import dependency_changes, server_dependency_changes
from bench.core import deps
from bench.core.manifest import discover
from bench.core.settings import Settings
from bench.core.plan import plan
from bench.paths import SERVERS_DIR
from bench.report.releases import release_cells, release_of, release_series
from bench.report.tables import build_tables

SPECS = discover([SERVERS_DIR])
DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("item, message", [
    ("sanic", "expected NAME=VERSION"),
    ("sanic=", "'' is not a version"),
    ("sanic=1.0,1.0", "lists a version twice"),
    ("sanic=1 0", "is not a version"),
])
def test_a_bad_dep_flag_is_refused_with_what_is_wrong(item, message):
    with pytest.raises(deps.DepError, match=message):
        deps.parse([item])


def test_a_dependency_named_twice_is_refused():
    with pytest.raises(deps.DepError, match="names Sanic twice"):
        deps.parse(["sanic=1.0", "Sanic=2.0"])


def test_each_framework_declaring_the_dependency_is_swept_and_labelled():
    versions = deps.swept(SPECS["sanic"], ["sanic=23.6.0,25.12.1"])
    assert [v.label for v in versions] == ["sanic@sanic=23.6.0", "sanic@sanic=25.12.1"]
    assert versions[0].deps == {"sanic": "23.6.0"}
    # a server without it, and a reference server, are measured as they are
    assert deps.swept(SPECS["fastapi"], ["sanic=23.6.0"]) == [SPECS["fastapi"]]
    assert deps.swept(SPECS["nginx"], ["sanic=23.6.0"]) == [SPECS["nginx"]]
    # PyPI names are normalised; a Go module path is exact
    assert deps.declares(SPECS["aiohttp"], "Jinja2") and deps.declares(SPECS["aiohttp"], "jinja2")
    assert deps.declares(SPECS["gin"], "github.com/gin-gonic/gin")
    assert not deps.declares(SPECS["gin"], "github.com/Gin-Gonic/gin")


def test_a_dep_no_selected_server_declares_or_can_override_is_refused():
    with pytest.raises(deps.DepError, match="no selected server declares it"):
        deps.check(["flask=3.0"], [SPECS["sanic"], SPECS["gin"]])
    # Java's Maven dependencies are not read: vertx declares nothing a --dep can name
    with pytest.raises(deps.DepError, match="no selected server declares it"):
        deps.check(["vertx-core=4.5.0"], [SPECS["vertx"]])


def test_a_rust_server_is_swept_over_its_own_crates_and_its_shared_crates():
    deps.check(["axum=0.8.1"], [SPECS["axum"]])
    assert [v.label for v in deps.swept(SPECS["axum"], ["axum=0.8.1"])] == ["axum@axum=0.8.1"]
    # sqlx is servers/_rscommon's, which axum is built with; the path crate itself is not
    assert deps.declares(SPECS["axum"], "sqlx") and deps.declares(SPECS["axum"], "tokio")
    assert not deps.declares(SPECS["axum"], "webbench-common")


def test_the_plan_has_a_case_per_release_and_refuses_a_stray_dep(tmp_path):
    settings = Settings(results_dir=tmp_path, servers=["sanic", "gin"], tests=["plain"],
                        deps=["sanic=23.6.0,24.12.0", "github.com/gin-gonic/gin=v1.11.0"],
                        ceiling=False)
    # in the order --servers names them, each framework's releases in the order listed
    assert [c.id for c in plan(settings, SPECS)] == [
        "sanic@sanic=23.6.0/none/raw/plain@c64", "sanic@sanic=24.12.0/none/raw/plain@c64",
        "gin@github.com/gin-gonic/gin=v1.11.0/none/raw/plain@c64"]
    with pytest.raises(deps.DepError):
        plan(Settings(results_dir=tmp_path, servers=["gin"], deps=["sanic=1.0"]), SPECS)


def test_an_override_replaces_the_pin_keeps_extras_and_adds_what_was_not_pinned():
    text = "# web\nSanic[ext]==25.12.1  # the framework\nuvloop==0.23.0\n"
    out = deps.with_overrides(text, {"sanic": "23.6.0", "websockets": "12.0"})
    assert "Sanic[ext]==23.6.0    # --dep (was 25.12.1)" in out
    assert "uvloop==0.23.0" in out and "websockets==12.0" in out
    assert deps.python_requirements(out)["sanic"] == "23.6.0"
    # asking for the version already pinned changes nothing (one environment for both)
    assert deps.with_overrides(text, {"sanic": "25.12.1"}) == text


def test_go_requirements_read_both_forms():
    text = ("module x\n\nrequire github.com/a/b v1.2.0\n\nrequire (\n\tgithub.com/c/d v0.1.0 "
            "// indirect\n\tgolang.org/x/net v0.5.0\n)\n")
    assert deps.go_requirements(text) == {"github.com/a/b": "v1.2.0", "github.com/c/d": "v0.1.0",
                                          "golang.org/x/net": "v0.5.0"}


def test_dependency_changes_name_each_bump_and_nothing_without_records():
    before = {"sanic": "25.12.1", "uvloop": "0.23.0", "gone": "1"}
    after = {"sanic": "23.6.0", "uvloop": "0.23.0", "new": "2"}
    assert dependency_changes(before, after) == ["-gone 1", "+new 2", "sanic 25.12.1 → 23.6.0"]
    assert dependency_changes(None, after) == [] and dependency_changes(before, {}) == []
    a = {"servers": {"sanic": {"versions": before}, "gin": {"versions": {"g": "1"}}}}
    b = {"servers": {"sanic": {"versions": after}, "gin": {"versions": {"g": "1"}}}}
    assert list(server_dependency_changes(a, b)) == ["sanic"]
    ab = {"servers": {"sanic@A": {"versions": before}, "sanic@B": {"versions": after}}}
    assert server_dependency_changes(ab, ab, "sanic@A", "sanic@B")["sanic"][-1] == \
        "sanic 25.12.1 → 23.6.0"


def test_release_rows_follow_the_listed_order_and_a_failed_release_says_why():
    assert release_of("sanic@sanic=23.6.0", {"sanic": ["23.6.0"]}) == ("sanic", "sanic", "23.6.0")
    assert release_of("gin@GOGC=200,github.com/x=v1", {"github.com/x": ["v1"]}) == \
        ("gin@GOGC=200", "github.com/x", "v1")
    assert release_of("sanic@A", {"sanic": ["23.6.0"]}) is None
    # a real run of `--dep sanic=23.6.0,24.12.0,25.12.1 --tests plain` (one sample each)
    # whose 24.12.0 case is marked failed here
    doc = json.loads((DATA / "release_sweep_results.json").read_text())
    broken = next(c for c in doc["cases"] if c["server"] == "sanic@sanic=24.12.0")
    broken.update(status="failed", reason="verification failed: ImportError")
    for sample in broken["samples"]:
        sample.update(status="failed", reason="verification failed: ImportError")
    tables = build_tables(doc)
    [series] = release_series(tables, doc["settings"])
    assert series.versions == ["23.6.0", "24.12.0", "25.12.1"]
    heads, rows = release_cells(series)
    assert heads[-1] == "25.12.1 vs 23.6.0"
    first, last = (next(c for c in doc["cases"] if c["server"] == f"sanic@sanic={v}")
                   for v in ("23.6.0", "25.12.1"))
    ratio = last["stats"]["requests_per_sec"]["median"] / first["stats"]["requests_per_sec"]["median"]
    assert rows[0][0] == "no database" and rows[0][1].endswith(" ms")
    assert rows[0][2].startswith("failed: verification failed") and rows[0][-1] == f"{ratio:.2f}x"
