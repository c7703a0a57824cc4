"""The database suite rendered from stored numbers alone: a table per test and level n,
n in the csv/json rows, req/s against n (table, chart, report), the cache's speed-up
over queries, and compare/history keeping two levels of a test apart."""
import csv
import io
import json
import re

import pytest

from bench.analysis import compare, history
from bench.report import charts, comparison, formats, html, levels, tables
from tests.unit.conftest import case_doc, run_doc


def suite_case(server, test, n, rps, orm=False, database="postgres", **kw):
    return case_doc(server, database, orm, test, rps=rps, n=n, **kw)


def suite_doc(run_id="20260102T000000Z-test", queries_20=(1000, 1010, 990)):
    doc = run_doc([
        suite_case("fast", "cached", 20, (30000, 30300, 29700)),
        suite_case("fast", "queries", 20, queries_20),
        suite_case("fast", "queries", 1, (9000, 9100, 8900)),
        suite_case("slow", "queries", 1, (3000, 3030, 2970)),
        suite_case("slow", "queries", 20, (400, 404, 396)),
        suite_case("slow", "cached", 20, (), status="failed", reason="died"),
        suite_case("fast", "fortunes", None, (5000, 5050, 4950)),
        suite_case("fast", "updates", 20, (200, 202, 198), orm=True),
        case_doc("fast", "postgres", False, "get user", rps=(9000, 9100, 8950)),
        case_doc("fast", "none", False, "plain", rps=(90000, 91000, 89000)),
    ])
    doc["run_id"] = run_id
    return doc


def test_a_table_per_test_and_level_in_the_suites_order_n_ascending():
    built = tables.build_tables(suite_doc())
    assert [t.title for t in built] == ["get user", "plain", "queries n=1", "queries n=20",
                                        "updates n=20", "fortunes", "cached n=20"]
    queries_20 = built[3]
    assert queries_20.n == 20 and [r.server for r in queries_20.rows] == ["fast", "slow"]
    # like get user: the database and orm are shown
    assert formats.markdown_rows(queries_20)[0][:4] == ["queries", "fast", "postgres", "False"]
    assert formats.markdown_rows(built[4])[0][:4] == ["updates", "fast", "postgres", "True"]
    cached = built[6]
    assert not cached.rows[1].ranked and cached.rows[1].reason.endswith("died")
    md = formats.to_markdown(built, suite_doc())
    assert "## queries n=1\n" in md and "## fortunes\n" in md
    assert md.index("## queries n=1\n") < md.index("## queries n=20\n")


def test_the_suites_level_appears_in_csv_and_json_rows_empty_for_other_tests():
    doc = suite_doc()
    built = tables.build_tables(doc)
    rows = list(csv.DictReader(io.StringIO(formats.to_csv(built, doc, extra=["errors"]))))
    levels_of = {(r["test_name"], r["webserver_name"], r["n"]) for r in rows}
    assert ("queries", "slow", "1") in levels_of and ("queries", "slow", "20") in levels_of
    assert {r["n"] for r in rows if r["test_name"] in ("get user", "plain", "fortunes")} == {""}
    assert list(rows[0])[-2:] == ["n", "errors"]     # before the columns added on request
    data = json.loads(formats.to_json(built, doc))
    by_title = {t["title"]: t for t in data["tables"]}
    assert by_title["queries n=20"]["n"] == 20
    assert [r["n"] for r in by_title["queries n=20"]["rows"]] == [20, 20]
    assert by_title["get user"]["rows"][0]["n"] is None


def test_a_run_without_the_suite_has_no_level_column():
    doc = run_doc([case_doc("fast", "postgres", False, "get user", rps=(9000, 9100, 8950))])
    built = tables.build_tables(doc)
    assert "n" not in next(csv.reader(io.StringIO(formats.to_csv(built, doc))))
    data = json.loads(formats.to_json(built, doc))
    assert "n" not in data["tables"][0] and "n" not in data["tables"][0]["rows"][0]
    assert "cache_speedups" not in data
    md = formats.to_markdown(built, doc)
    assert "against n" not in md and "cache speed-up" not in md


def test_req_per_s_against_n_per_variant_where_a_test_ran_at_several_levels():
    (series,) = levels.level_series(tables.build_tables(suite_doc()))   # queries only
    assert series.test == "queries" and series.levels == [1, 20]
    assert {name: [(r.n, r.rps.median) for r in rows] for name, rows in series.curves.items()} \
        == {"fast (postgres, raw)": [(1, 9000), (20, 1000)],
            "slow (postgres, raw)": [(1, 3000), (20, 400)]}
    heads, rows = levels.level_cells(series)
    assert heads == ["variant", "n=1", "n=20"]
    assert rows[0][0] == "fast (postgres, raw)" and rows[0][1].startswith("9,000 [")
    md = formats.to_markdown(tables.build_tables(suite_doc()), suite_doc())
    assert "## queries: req/s against n" in md
    assert f"Chart: charts/{series.chart_name}" in md


def test_a_variant_missing_a_level_shows_a_dash_and_failed_levels_make_no_point():
    doc = run_doc([suite_case("fast", "queries", 1, (9000,)), suite_case("fast", "queries", 20,
                                                                          (1000,)),
                   suite_case("slow", "queries", 1, (3000,)),
                   suite_case("slow", "queries", 20, (), status="failed", reason="died")],
                  repeat=1)
    (series,) = levels.level_series(tables.build_tables(doc))
    heads, rows = levels.level_cells(series)
    assert rows == [["fast (postgres, raw)", "9,000", "1,000"],
                    ["slow (postgres, raw)", "3,000", "-"]]


def test_one_level_only_makes_no_series():
    doc = run_doc([suite_case("fast", "queries", 20, (1000,))], repeat=1)
    assert levels.level_series(tables.build_tables(doc)) == []


def test_the_cache_speed_up_is_the_ratio_of_medians_with_its_bootstrap_interval():
    doc = suite_doc()
    (speedup,) = levels.cache_speedups(doc)     # slow's cached failed: no ratio for it
    assert speedup.variant == "fast (postgres, raw)" and speedup.n == 20
    assert speedup.ratio == pytest.approx(30.0)
    low, high = speedup.ci
    assert low <= 30.0 <= high and low > 25
    headers, rows = levels.speedup_table(doc)
    assert headers == ["variant", "n", "cached req/sec", "queries req/sec", "speed-up [95 % CI]"]
    assert rows[0][:4] == ["fast (postgres, raw)", "20", "30,000", "1,000"]
    assert rows[0][4].startswith("30.00× [")
    md = formats.to_markdown(tables.build_tables(doc), doc)
    assert "## cache speed-up" in md and "ratio of medians" in md
    assert json.loads(formats.to_json(tables.build_tables(doc), doc))["cache_speedups"][0][
        "ratio"] == pytest.approx(30.0)


def test_no_speed_up_at_a_level_where_queries_did_not_run_ok():
    doc = run_doc([suite_case("fast", "cached", 20, (30000,)),
                   suite_case("fast", "queries", 20, (), status="invalid", reason="errors"),
                   suite_case("fast", "cached", 1, (40000,)),
                   suite_case("fast", "queries", 1, (8000,))], repeat=1)
    (speedup,) = levels.cache_speedups(doc)
    assert (speedup.n, speedup.ratio, speedup.ci) == (1, 5.0, None)   # one sample: no interval


def test_the_report_embeds_the_level_chart_and_the_speed_up(tmp_path):
    doc = suite_doc()
    built = tables.build_tables(doc)
    (series,) = levels.level_series(built)
    page = html.write(doc, built, tmp_path).read_text()
    assert (tmp_path / "charts" / series.chart_name).stat().st_size > 0
    assert "queries: req/s against n" in page and "cache speed-up" in page
    assert re.search(r"<td[^>]*>\s*30.00× \[", page)
    # throughput + latency per table with ok rows (7), the levels chart, cost to run
    assert page.count("data:image/png;base64") == 2 * 7 + 1 + 1


def test_the_level_chart_has_a_log_n_axis(tmp_path, monkeypatch):
    seen = {}
    original = charts._subplots

    def spy(*args, **kw):
        fig, ax = original(*args, **kw)
        seen["ax"] = ax
        return fig, ax
    monkeypatch.setattr(charts, "_subplots", spy)
    (series,) = levels.level_series(tables.build_tables(suite_doc()))
    charts.level_chart(series, suite_doc(), tmp_path / "q.png")
    ax = seen["ax"]
    assert ax.get_xscale() == "log" and list(ax.get_xticks()) == [1, 20]
    assert sorted(ax.get_legend_handles_labels()[1]) == ["fast (postgres, raw)",
                                                         "slow (postgres, raw)"]


def test_two_levels_of_a_test_are_two_cases_for_compare():
    base = suite_doc("r1")
    cand = suite_doc("r2", queries_20=(500, 505, 495))      # only n=20 got slower
    for doc in (base, cand):
        doc["environment"]["machine_id"] = "m1"
    ids = [c["id"] for c in base["cases"] if c["test"] == "queries" and c["server"] == "fast"]
    keys = [c["key"] for c in base["cases"] if c["test"] == "queries" and c["server"] == "fast"]
    assert len(set(ids)) == 2 and keys[0] != keys[1] and {k["n"] for k in keys} == {1, 20}
    result = compare.compare(base, cand, threshold=0.05)
    rows = {c.id: c for c in result.cases if c.server == "fast" and c.test == "queries"}
    assert len(rows) == 2
    by_n = {c.n: c for c in rows.values()}
    assert by_n[20].rps_ratio == pytest.approx(0.5) and by_n[1].rps_ratio == pytest.approx(1.0)
    assert by_n[20].title == "queries n=20"
    md = comparison.to_markdown(result)
    assert "| queries n=20 " in md and "| queries n=1 " in md
    as_json = json.loads(comparison.to_json(result))
    assert {c["n"] for c in as_json["cases"] if c["test"] == "queries"} == {1, 20}
    assert "n" not in next(c for c in as_json["cases"] if c["test"] == "get user")


def test_a_level_missing_in_the_candidate_is_missing_not_matched_with_another():
    base = suite_doc("r1")
    cand = suite_doc("r2")
    cand["cases"] = [c for c in cand["cases"]
                     if not (c["test"] == "queries" and c["key"].get("n") == 20)]
    rows = [c for c in compare.compare(base, cand).cases
            if c.test == "queries" and c.server == "fast"]
    assert {(c.n, c.reason) for c in rows} == {(1, None), (20, "missing in the candidate")}


def test_two_levels_of_a_test_are_two_history_series():
    docs = [suite_doc(f"2026010{i}T000000Z-box") for i in range(1, 4)]
    for i, doc in enumerate(docs, 1):
        doc["started_at"] = f"2026-01-0{i}T00:00:00+00:00"
        doc["environment"]["machine_id"] = "box-1"
    series = [s for s in history.build(docs, test="queries") if s.server == "fast"]
    assert sorted(s.title for s in series) == ["queries n=1", "queries n=20"]
    assert {s.n: [p.median for p in s.points] for s in series} == {1: [9000] * 3,
                                                                   20: [1000] * 3}


def test_open_model_points_of_two_levels_make_two_rate_tables():
    from bench.core.plan import LoadParams
    doc = run_doc([suite_case("fast", "queries", n, (rps,), load=LoadParams(64, generator="oha",
                                                                             rate="50%"))
                   for n, rps in ((1, 4500), (20, 500))], repeat=1)
    rates = tables.build_rate_tables(doc)
    assert [(t.title.split(":")[0], t.n) for t in rates] == [("queries n=1", 1),
                                                             ("queries n=20", 20)]
    text = formats.to_csv([], doc, rates=rates)
    points = list(csv.DictReader(io.StringIO(text.split("\n\n", 1)[1])))
    assert [p["n"] for p in points] == ["1", "20"]
