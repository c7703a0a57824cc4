"""The database suite end to end: a real server (gin, both engines' raw variant on
PostgreSQL here) measured on queries, updates, fortunes and cached at two levels of n,
with wrk, its cache filled (counted by the database) before it is timed, and the tables
of each test and level, req/s against n and the cache's speed-up rendered."""
from __future__ import annotations

import pytest

from tests.e2e.test_modes import only_run_dir
from tests.e2e.test_run_bench import PORTS, only_run, run_bench

pytestmark = pytest.mark.e2e


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_the_suite_at_two_levels_of_n(tmp_path):
    out = run_bench("--servers", "gin", "--databases", "postgres", "--orm", "raw",
                    "--tests", "queries,updates,fortunes,cached", "--n", "1,5",
                    "--connections", "16", "--repeat", "1", "--duration", "1",
                    "--warmup", "0", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-3000:]
    doc = only_run(tmp_path)
    cases = {(c["test"], c["key"].get("n")): c for c in doc["cases"]}
    assert set(cases) == {("queries", 1), ("queries", 5), ("updates", 1), ("updates", 5),
                          ("cached", 1), ("cached", 5), ("fortunes", None)}
    for (test, n), case in cases.items():
        assert case["status"] == "ok", (case["id"], case["reason"])
        sample = case["samples"][0]
        assert sample["summary"]["requests"] > 0 and sample["summary"]["errors"]["total"] == 0
        command = sample["generator"]["command"]
        assert f"{test}.lua" in " ".join(command)
        assert (f"n={n}" in command) == (n is not None)
        if test == "cached":      # filled until a round sent no SELECT, then measured
            fill = sample["checks"]["cache_fill"]
            assert fill["full"] is True and fill["selects"][0] > 0 and fill["selects"][-1] == 0
    report = doc["verification"]["gin/postgres/raw"]
    assert report["passed"]
    assert report["queries"]["updates n=20"]["per_request"]["update"] == pytest.approx(20, abs=0.05)
    md = (only_run_dir(tmp_path) / "tables.md").read_text()
    for title in ("queries n=1", "queries n=5", "updates n=5", "cached n=1", "fortunes"):
        assert f"## {title} " in md or f"## {title}\n" in md, title
    assert "cache speed-up" in md.lower()
    assert (only_run_dir(tmp_path) / "charts" / "queries__req_s_against_n-levels.png").is_file()
