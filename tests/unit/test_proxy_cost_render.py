"""What each --behind proxy costs, rendered from stored numbers alone: each proxy's req/s
as a share of the direct figure and the p99 it adds, for every variant measured both
ways in one run (markdown table and report.html)."""
from bench.core.plan import LoadParams
from bench.report import formats, html, proxies, tables
from tests.unit.conftest import case_doc, run_doc


def behind(server, database, test, proxy, rps):
    # p99 = 3000 / rps ms in these documents (tests/unit/conftest.summary)
    return case_doc(server, database, False, test, rps=(rps, rps), load=LoadParams(64, proxy=proxy))


def proxy_doc():
    return run_doc([
        behind("fast", "postgres", "get user", "none", 10000),
        behind("fast", "postgres", "get user", "nginx", 6000),
        behind("fast", "postgres", "get user", "haproxy", 5000),
        behind("slow", "postgres", "get user", "nginx", 2000),     # never direct: left out
        behind("fast", "none", "plain", "none", 50000),
        behind("fast", "none", "plain", "haproxy", 12500),
        case_doc("broken", "postgres", False, "get user", rps=(), status="failed",
                 reason="died", load=LoadParams(64, proxy="nginx")),
    ], repeat=2)


def test_each_proxy_as_a_share_of_direct_with_the_p99_it_adds():
    costs = proxies.proxy_costs(tables.build_tables(proxy_doc()))
    by_test = {c.test: c for c in costs}
    assert set(by_test) == {"get user", "plain"}
    get_user = by_test["get user"]
    assert sorted(get_user.proxies) == ["haproxy", "nginx"]
    assert list(get_user.rows) == ["fast (postgres, raw)"]
    heads, rows = proxies.proxy_cost_cells(get_user)
    assert heads[:2] == ["variant", "direct req/s / p99"]
    cells = dict(zip(heads, rows[0]))
    assert cells["direct req/s / p99"] == "10,000 / 0.3 ms"
    assert cells["behind nginx: share / p99 (added)"] == "60% / 0.5 ms (+0.2)"
    assert cells["behind haproxy: share / p99 (added)"] == "50% / 0.6 ms (+0.3)"
    heads, rows = proxies.proxy_cost_cells(by_test["plain"])
    assert rows == [["fast", "50,000 / 0.1 ms", "25% / 0.2 ms (+0.2)"]]


def test_the_proxy_cost_is_in_tables_md_and_report_html(tmp_path):
    doc = proxy_doc()
    built = tables.build_tables(doc)
    md = formats.to_markdown(built, doc)
    assert "## get user: what each proxy costs (64 connections, keep-alive)" in md
    assert "| fast (postgres, raw) | 10,000 / 0.3 ms      | 50% / 0.6 ms (+0.3)" in md
    page = html.render(doc, built, tmp_path / "charts")
    assert "what each proxy costs" in page and "60% / 0.5 ms (+0.2)" in page


def test_a_run_without_a_direct_and_a_proxied_measurement_has_no_proxy_cost():
    direct = run_doc([case_doc("fast", "postgres", False, "get user", rps=(9000, 9100))])
    only_behind = run_doc([behind("fast", "postgres", "get user", "nginx", 6000)])
    for doc in (direct, only_behind):
        assert proxies.proxy_costs(tables.build_tables(doc)) == []
        assert "what each proxy costs" not in formats.to_markdown(tables.build_tables(doc), doc)
