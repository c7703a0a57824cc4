"""Verification of the database suite against real databases: the correct fixture
passes every suite check, and each defect planted in tests/fixtures/broken_server/suite.py
(one IN list for `queries`, an unescaped fortunes page, an undeclared batch of updates)
is caught by the check meant for it, one case each (the counts themselves are checked
on both engines by the correct fixture)."""
from __future__ import annotations

import pytest

from bench.infra import db
from bench.core.dataset import all_users
from tests.integration.test_verify import endpoints, started_fixture  # noqa: F401 (a fixture)

pytestmark = pytest.mark.integration


def verified(server_id: str, engine: str, endpoints, tmp_path):
    db.restore(endpoints[engine])
    with started_fixture(server_id, engine, endpoints, tmp_path, workers=2,
                         db_connections=2) as running:
        report = running.verification
    print(report.summary_text())
    return report


def suite_failures(report) -> dict[str, str]:
    names = ("suite", "queries n=", "updates", "fortunes", "cached", "queries per queries",
             "queries per updates", "queries per fortunes", "queries per cached")
    return {c.name: c.detail for c in report.failures if c.name.startswith(names)}


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_the_correct_suite_fixture_passes_and_is_counted(engine, endpoints, tmp_path):
    report = verified("correct_suite", engine, endpoints, tmp_path)
    assert report.passed, report.summary_text()
    assert {"fortunes page", "updates stored", "queries n clamping",
            "queries per cached"} <= {c.name for c in report.checks}
    per = report.queries["queries n=20"]["per_request"]
    assert per["select"] == pytest.approx(20, abs=0.05) and per["update"] == 0
    per = report.queries["updates n=20"]["per_request"]
    assert (per["select"], per["update"]) == (pytest.approx(20, abs=0.05), pytest.approx(20, abs=0.05))
    assert report.queries["fortunes"]["per_request"]["select"] == pytest.approx(1, abs=0.05)
    windows = report.queries["cached"]["windows"]
    assert windows[0]["select"] > 0 and all(w["select"] <= w["ids_first_seen"] for w in windows)
    assert windows[-1]["ids_first_seen"] < 900      # ids repeated: those sent no SELECT
    assert db.fetch_users(endpoints[engine]) == all_users()      # updates restored
    pipelining = next(c for c in report.checks if c.name == "pipelining")
    assert pipelining.passed and report.queries["pipelining"]["pipelined"] == 0
    assert report.queries["pipelining"]["requests"] > 3_000     # the cache's windows among them


def test_one_in_list_for_queries_is_caught(endpoints, tmp_path):
    failures = suite_failures(verified("broken_suite_in_list", "postgres", endpoints, tmp_path))
    assert list(failures) == ["queries per queries n=20"], failures
    assert "IN (...)" in failures["queries per queries n=20"]


def test_an_unescaped_fortunes_page_is_caught(endpoints, tmp_path):
    failures = suite_failures(verified("broken_suite_unescaped", "postgres", endpoints, tmp_path))
    assert list(failures) == ["fortunes page"], failures
    assert "<script> appears unescaped" in failures["fortunes page"]


def test_an_undeclared_batch_of_updates_is_caught(endpoints, tmp_path):
    failures = suite_failures(verified("broken_suite_undeclared_batch", "mysql", endpoints,
                                       tmp_path))
    assert list(failures) == ["queries per updates n=20"], failures
    assert "batching that the manifest does not declare" in failures["queries per updates n=20"]


def test_undeclared_pipelining_is_caught_on_the_wire(endpoints, tmp_path):
    """The right statements, in the right number, but sent without awaiting each answer
    (psycopg's pipeline mode): only the relay in front of the database sees it."""
    report = verified("broken_suite_pipelined", "postgres", endpoints, tmp_path)
    failures = suite_failures(report) | {c.name: c.detail for c in report.failures
                                         if c.name == "pipelining"}
    assert list(failures) == ["pipelining"], failures
    assert "pipelining that the manifest does not declare" in failures["pipelining"]
    seen = report.queries["pipelining"]
    assert seen["pipelined"] >= 19 * 10 and seen["max_outstanding"] >= 20


def test_a_cached_endpoint_that_reads_every_row_again_is_caught(endpoints, tmp_path):
    failures = suite_failures(verified("broken_suite_no_cache", "mysql", endpoints, tmp_path))
    assert list(failures) == ["queries per cached"], failures
    assert "an id already cached was read again" in failures["queries per cached"]
