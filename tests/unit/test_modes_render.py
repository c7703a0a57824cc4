"""The tables of the measurement modes, built from stored numbers alone: a sweep's
sections, the ceiling row and each row's fraction of it, and the latency-vs-rate tables
with their knee."""
import csv
import io
import json
import re

from bench.core.plan import LoadParams
from bench.report import formats, tables
from tests.unit.conftest import summary, case_doc, run_doc


def cell(text: str, md: str) -> bool:
    """A markdown table cell holding exactly `text` (tabulate pads cells)."""
    return re.search(r"\|\s*" + re.escape(text) + r"\s*\|", md) is not None


def with_reference(doc, *servers):
    doc["servers"] = {s: {"reference": True} for s in servers}
    return doc


def test_a_sweep_gets_one_section_per_level_and_mode():
    doc = run_doc([
        case_doc("fast", "none", False, "plain", rps=(9000,), load=LoadParams(16)),
        case_doc("fast", "none", False, "plain", rps=(12000,), load=LoadParams(64)),
        case_doc("fast", "none", False, "plain", rps=(3000,), load=LoadParams(64, "close")),
        case_doc("fast", "none", False, "plain", rps=(8000,),
                load=LoadParams(64, proxy="nginx")),
    ], repeat=1)
    titles = [t.title for t in tables.build_tables(doc)]
    assert titles == ["plain (16 connections, keep-alive)", "plain (64 connections, close)",
                      "plain (64 connections, keep-alive)",
                      "plain (64 connections, keep-alive, behind nginx)"]


def test_every_row_is_a_fraction_of_the_reference_server_measured_in_the_same_run():
    doc = with_reference(run_doc([
        case_doc("nginx", "none", False, "plain", rps=(40000, 40000, 40000)),
        case_doc("fast", "none", False, "plain", rps=(30000, 30000, 30000)),
        case_doc("slow", "none", False, "plain", rps=(4000, 4000, 4000)),
        case_doc("fast", "none", False, "plain", rps=(20000, 20000, 20000),
                load=LoadParams(64, proxy="nginx")),
        case_doc("fast", "postgres", False, "get user", rps=(9000, 9000, 9000)),
    ]), "nginx")
    built = {t.title: t for t in tables.build_tables(doc)}
    direct = built["plain (64 connections, keep-alive)"]
    assert direct.ceiling == "nginx"
    assert {r.server: r.of_ceiling for r in direct.rows} == {"nginx": 1.0, "fast": 0.75,
                                                             "slow": 0.1}
    # behind a proxy: still a fraction of the direct ceiling at the same load
    behind = built["plain (64 connections, keep-alive, behind nginx)"]
    assert behind.rows[0].of_ceiling == 0.5
    assert built["get user (64 connections, keep-alive)"].ceiling is None
    md = formats.to_markdown(list(built.values()), doc)
    assert cell("nginx (reference)", md) and cell("of ceiling", md) and cell("75.0 %", md)
    assert "a reference server that does the least possible work" in md
    rows = list(csv.DictReader(io.StringIO(formats.to_csv(list(built.values()), doc))))
    assert {r["webserver_name"]: r["of_ceiling"] for r in rows if r["test_name"] == "plain"
            and r["proxy"] == "none"} == {"nginx": "1", "fast": "0.75", "slow": "0.1"}


def rate_case(server, rate, asked, achieved, p99, status="ok", reason=None):
    case = case_doc(server, "postgres", False, "get user", rps=(achieved,), status=status,
                   reason=reason, load=LoadParams(64, generator="oha", rate=rate))
    sample = case["samples"][0]
    sample["summary"] = {**summary(achieved, p99 / 3),
                         "rate": {"asked": asked, "achieved": achieved, "not_sent": 0,
                                  "late": None}}
    sample["generator"].update(name="oha", rate=sample["summary"]["rate"])
    return case


def test_rate_tables_give_each_point_and_the_knee_under_the_stated_bound():
    doc = run_doc([
        case_doc("fast", "postgres", False, "get user", rps=(10000,)),
        rate_case("fast", "25%", 2500, 2500, 3.0),
        rate_case("fast", "50%", 5000, 5000, 9.0),
        rate_case("fast", "90%", 9000, 7000, 80.0, status="invalid",
                  reason="asked for 9,000 req/s but 7,000 req/s were sent and answered"),
    ], repeat=1)
    doc["settings"]["knee_p99_ms"] = 20.0
    assert [t.title for t in tables.build_tables(doc)] == ["get user"]   # closed loop only
    (table,) = tables.build_rate_tables(doc)
    assert table.title == "get user: latency at fixed request rates (64 connections, " \
                          "keep-alive, open model)"
    assert [(r.rate, r.asked, r.knee) for r in table.rows] == [("25%", 2500, False),
                                                               ("50%", 5000, True),
                                                               ("90%", 9000, False)]
    assert table.knees == {"fast (postgres, raw)": 5000}
    md = formats.to_markdown([], doc, rates=[table])
    assert re.search(r"\| 5,000 req/s \(50%\)\s*\| 5,000 \(knee\)\s*\|", md)
    assert "- fast (postgres, raw): 5,000 req/s" in md
    assert "invalid: asked for 9,000 req/s" in md
    data = json.loads(formats.to_json([], doc, rates=[table]))
    assert data["rate_tables"][0]["knees"] == {"fast (postgres, raw)": 5000}
    assert "rate_asked" in formats.to_csv([], doc, rates=[table])


def test_the_html_report_has_the_rate_tables_and_their_chart(tmp_path):
    from bench.report import html
    doc = run_doc([
        case_doc("fast", "postgres", False, "get user", rps=(10000,)),
        rate_case("fast", "25%", 2500, 2500, 3.0),
        rate_case("fast", "50%", 5000, 5000, 9.0),
    ], repeat=1)
    doc["settings"]["knee_p99_ms"] = 20.0
    path = html.write(doc, tables.build_tables(doc), tmp_path, tables.build_rate_tables(doc))
    page = path.read_text()
    assert "latency at fixed request rates" in page and "5,000 req/s" in page
    assert (tmp_path / "charts" / "get_user__latency_at_fixed_request_rates__64_connections__"
                                  "keep_alive__open_model-rate.png").exists()
    assert page.count("data:image/png;base64") == 4   # throughput, latency, rate, cost to run


def test_the_html_table_of_a_ceiling_has_its_column(tmp_path):
    from bench.report import html
    doc = with_reference(run_doc([
        case_doc("nginx", "none", False, "plain", rps=(40000, 40000, 40000)),
        case_doc("fast", "none", False, "plain", rps=(30000, 30000, 30000))]), "nginx")
    page = html.write(doc, tables.build_tables(doc), tmp_path).read_text()
    assert re.search(r"<th[^>]*>\s*of ceiling\s*</th>", page) and "75.0 %" in page
