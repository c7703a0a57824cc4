"""What TLS costs and what HTTP/2 gives, from stored numbers alone: each variant over
h1-tls, h2 or h2c against its h1 baseline in the same run (through the same proxy where
measured, else direct), the share paired round by round with its interval, p99 and the
server + proxy CPU per request added; in tables.md, report.html and a chart."""
import pytest

from bench.analysis.statistics import paired_ratio
from bench.core.plan import LoadParams
from bench.report import charts, formats, html, protocols, tables
from tests.unit.conftest import case_doc, run_doc


def over(protocol, rps, proxy="none", streams=1, server="fast", test="plain", cpu=None,
         generator="wrk"):
    case = case_doc(server, "none" if test == "plain" else "postgres", False, test, rps=rps,
                    load=LoadParams(64, generator=generator, proxy=proxy, protocol=protocol,
                                    streams=streams))
    for sample in case["samples"]:          # server and proxy CPU-µs per request
        for role, value in (cpu or {}).items():
            sample["resources"][role] = {"cpu_us_per_request": value, "memory_mean_mb": 1.0,
                                         "accounting": "cgroup2", "cpu_s": 1.0,
                                         "mean_cores": 1.0, "peak_cores": 1.0,
                                         "memory_peak_mb": 1.0}
    return case


def test_the_share_is_paired_round_by_round_and_skips_a_round_either_side_lacks():
    share = paired_ratio([1000, 2000, 1500, None, 1000], [500, 1000, 900, 700, None])
    assert share.n == 3 and share.median == pytest.approx(0.5)
    assert share.min == pytest.approx(0.5) and share.max == pytest.approx(0.6)
    assert share.ci_low <= share.median <= share.ci_high
    assert paired_ratio([0, None], [1, 2]).median is None      # no ratio of a zero


def tls_and_h2_doc():
    return run_doc([
        over("h1", (10000, 20000, 15000), cpu={"server": 20.0}),
        over("h1-tls", (5000, 10000, 9000), proxy="nginx",
             cpu={"server": 20.0, "proxy": 15.0}),
        over("h2", (4000, 8000, 6000), proxy="nginx", generator="h2load",
             cpu={"server": 20.0, "proxy": 30.0}),
        over("h2", (12000, 24000, 18000), proxy="nginx", streams=10, generator="h2load"),
        over("h1", (6000, 6000, 6000), server="slow"),            # nothing to compare
        over("h1-tls", (3000,) * 3, server="alone", proxy="nginx"),   # no h1 baseline
    ])


def test_tls_cost_and_http2_gain_against_h1_direct():
    found = {t.kind: t for t in protocols.protocol_effects(tls_and_h2_doc())}
    assert set(found) == {protocols.TLS_COSTS, protocols.HTTP2_GIVES}
    tls = found[protocols.TLS_COSTS]
    assert tls.title == "plain: what TLS costs (64 connections, keep-alive)"
    heads, rows = protocols.effect_cells(tls)
    assert heads == protocols.HEADERS
    # shares 0.5, 0.5, 0.6: median 50 %; p99 = 3000 / req/s ms (conftest.summary)
    assert rows == [["fast", "h1-tls, behind nginx", "h1 direct", "15,000 → 9,000",
                     rows[0][4], "0.2 → 0.3 (+0.1)", "20.0 → 35.0 (+15.0)", "no"]]
    assert rows[0][4].startswith("50% [")
    h2 = {r[1]: r for r in protocols.effect_cells(found[protocols.HTTP2_GIVES])[1]}
    assert set(h2) == {"h2, 1 stream, behind nginx", "h2, 10 streams, behind nginx"}
    assert h2["h2, 10 streams, behind nginx"][4].startswith("120% [")
    assert h2["h2, 1 stream, behind nginx"][6] == "20.0 → 50.0 (+30.0)"
    assert h2["h2, 10 streams, behind nginx"][6] == "-"        # no cost measured


def test_the_baseline_is_h1_through_the_same_proxy_where_the_run_measured_it():
    doc = run_doc([over("h1", (10000,) * 3), over("h1", (8000,) * 3, proxy="nginx"),
                   over("h1-tls", (6000,) * 3, proxy="nginx")])
    [table] = protocols.protocol_effects(doc)
    [effect] = table.effects
    assert effect.against == "h1 behind nginx" and effect.share.median == pytest.approx(0.75)


def test_a_client_bound_side_is_named_with_its_generator():
    doc = tls_and_h2_doc()
    for case in doc["cases"]:
        if case["key"].get("generator") == "h2load":
            for sample in case["samples"]:
                sample["checks"] = {"client_bound": True}
    h2 = next(t for t in protocols.protocol_effects(doc) if t.kind == protocols.HTTP2_GIVES)
    assert {r[7] for r in protocols.effect_cells(h2)[1]} == {"this (h2load)"}


def test_both_tables_and_charts_are_in_tables_md_and_report_html(tmp_path):
    doc = tls_and_h2_doc()
    built = tables.build_tables(doc)
    md = formats.to_markdown(built, doc)
    assert "## plain: what TLS costs (64 connections, keep-alive)" in md
    assert "## plain: what HTTP/2 gives (64 connections, keep-alive)" in md
    page = html.render(doc, built, tmp_path / "charts")
    assert "what HTTP/2 gives" in page and "20.0 → 35.0 (+15.0)" in page
    drawn = {p.name for p in charts.run_charts(built, doc, tmp_path / "c")}
    assert {t.chart_name for t in protocols.protocol_effects(doc)} <= drawn


def test_a_run_over_one_protocol_has_neither_table():
    doc = run_doc([over("h1", (10000,) * 3), over("h1", (9000,) * 3, server="slow")])
    assert protocols.protocol_effects(doc) == []
    assert "what TLS costs" not in formats.to_markdown(tables.build_tables(doc), doc)
