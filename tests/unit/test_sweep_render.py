"""A concurrency sweep rendered from stored numbers alone (req/s and p99 against
connections: markdown table, chart, report), and tables.md pointing to the verification
report."""
from bench.report import charts, formats, html, sweep, tables
from tests.unit.conftest import case_doc, run_doc


def sweep_doc():
    cases = []
    for c, fast, slow in ((16, 8000, 3000), (64, 9000, 2900), (256, 8500, 2000)):
        cases.append(case_doc("fast", "postgres", False, "get user", connections=c,
                              rps=(fast, fast * 1.01, fast * 0.99)))
        cases.append(case_doc("slow", "postgres", False, "get user", connections=c,
                              rps=(slow, slow * 1.01, slow * 0.99)))
    cases.append(case_doc("broken", "postgres", False, "get user", connections=64,
                          rps=(), status="failed", reason="died"))
    cases.append(case_doc("fast", "none", False, "plain", connections=64, rps=(90000,)))
    return run_doc(cases)


def test_a_series_per_test_measured_at_several_connection_levels_ok_rows_only():
    (series,) = sweep.sweep_series(tables.build_tables(sweep_doc()))     # plain: one level
    assert series.test == "get user" and series.connections == [16, 64, 256]
    assert list(series.curves) == ["fast (postgres, raw)", "slow (postgres, raw)"]
    fast = series.curves["fast (postgres, raw)"]
    assert [c for c, _ in fast] == [16, 64, 256]
    assert [round(r.rps.median) for _, r in fast] == [8000, 9000, 8500]
    heads, rows = sweep.sweep_cells(series)
    assert heads == ["variant", "c=16 req/s / p99", "c=64 req/s / p99", "c=256 req/s / p99"]
    assert rows[1][0] == "slow (postgres, raw)" and rows[1][3].startswith("2,000 / ")
    assert rows[1][3].endswith(" ms")


def test_the_sweep_is_in_tables_md_and_report_html_with_its_chart(tmp_path):
    doc = sweep_doc()
    built = tables.build_tables(doc)
    md = formats.to_markdown(built, doc)
    assert "## get user: req/s and p99 against connections (keep-alive)" in md
    paths = charts.run_charts(built, doc, tmp_path / "charts")
    (chart,) = [p for p in paths if p.name.endswith("-sweep.png")]
    assert chart.read_bytes().startswith(b"\x89PNG")
    page = html.render(doc, built, tmp_path / "charts")
    assert "req/s and p99 against connections" in page and page.count("<img") == len(paths)


def test_a_run_with_one_connection_level_has_no_sweep():
    doc = run_doc([case_doc("fast", "postgres", False, "get user", rps=(9000, 9100))])
    assert sweep.sweep_series(tables.build_tables(doc)) == []
    assert "against connections" not in formats.to_markdown(tables.build_tables(doc), doc)


def test_tables_md_links_the_verification_report_or_says_the_run_was_unverified(tmp_path):
    doc = sweep_doc()
    doc["verification"] = {"fast/postgres/raw": {"passed": True},
                           "broken/postgres/raw": {"passed": False, "reason": "x"}}
    md = formats.to_markdown(tables.build_tables(doc), doc)
    assert ("Verification: 1 of 2 variants passed the contract's checks before any load; "
            "every check with its measured figures: [verification.txt](verification.txt).") in md
    assert 'href="verification.txt"' in html.render(doc, tables.build_tables(doc), tmp_path)
    doc["verification"], doc["settings"]["verify"] = {}, False
    assert "Not verified (--no-verify)" in formats.to_markdown(tables.build_tables(doc), doc)


def test_one_level_closed_with_wrk_oha_and_k6_is_no_sweep_and_each_table_names_its_own():
    """--generator wrk,oha,k6 at one connection level: three tables of one case, not a
    series against connections (a sweep per generator only with several levels)."""
    from bench.core.plan import LoadParams
    doc = run_doc([case_doc("nginx", "none", False, "plain", rps=(r,),
                            load=LoadParams(64, generator=g))
                   for g, r in (("wrk", 90000), ("oha", 60000), ("k6", 4000))])
    built = tables.build_tables(doc)
    assert [t.title for t in built] == ["plain (64 connections, keep-alive)",
                                        "plain (64 connections, keep-alive, k6)",
                                        "plain (64 connections, keep-alive, oha)"]
    assert sweep.sweep_series(built) == []
    swept = run_doc([case_doc("nginx", "none", False, "plain", rps=(r,),
                              load=LoadParams(c, generator=g))
                     for g, r in (("wrk", 90000), ("oha", 60000)) for c in (16, 64)])
    titles = [s.title for s in sweep.sweep_series(tables.build_tables(swept))]
    assert titles == ["plain: req/s and p99 against connections (keep-alive)",
                      "plain: req/s and p99 against connections (keep-alive, oha)"]
