"""HTTP conformance verdicts as stored in a verification report: the compact cell, the
verification report's text, the tables' column and notes, report.html. Rendering reads
the stored JSON only; a run without verdicts renders as before (tests/unit/test_golden.py)."""
from __future__ import annotations

import csv
import io
import json

from bench.core.conformance import CHECKS, FAIL, NOT_APPLICABLE, PASS, cell
from bench.report import formats, tables
from bench.verify.checks import Check, Report
from tests.unit.conftest import case_doc, run_doc


def verdicts(overrides: dict = {}) -> dict:        # noqa: B006 - never mutated
    found = {name: {"verdict": PASS, "detail": "fine"} for name in CHECKS}
    for name, (result, detail) in overrides.items():
        assert name in CHECKS
        found[name] = {"verdict": result, "detail": detail}
    return found


FROZEN = verdicts({"date": (FAIL, "Date stayed 'x' for 4.1 s (frozen)"),
                   "close": (FAIL, "connection still open 2 s after answering"),
                   "keep-alive-1.0": (NOT_APPLICABLE, "declines HTTP/1.0 keep-alive")})


def test_the_cell_counts_passes_over_applicable_checks_and_names_the_failures():
    assert cell(verdicts()) == f"{len(CHECKS)}/{len(CHECKS)}"
    assert cell(FROZEN) == f"{len(CHECKS) - 3}/{len(CHECKS) - 1} ✗date,close"
    assert cell(None) == cell({}) == "-"


def test_the_verification_report_keeps_verdicts_as_warnings_never_a_failure():
    report = Report("fast", "none", False, [Check("plain", True)])
    assert "conformance" not in report.to_dict()      # none recorded: the dict as before
    report.conformance = {"none": FROZEN, "nginx": verdicts()}
    assert report.passed and report.reason == ""
    assert report.to_dict()["conformance"] == {"none": FROZEN, "nginx": verdicts()}
    text = report.summary_text()
    assert "PASSED - 1 checks, 0 failed, 0 warnings" in text
    assert f"HTTP conformance, direct: {cell(FROZEN)}" in text
    assert f"HTTP conformance, behind nginx: {cell(verdicts())}" in text
    assert "    warn date: Date stayed 'x' for 4.1 s (frozen)" in text
    assert "declines" not in text                  # only what failed is spelled out


def conformance_doc() -> dict:
    doc = run_doc([case_doc("fast", "none", False, "plain", rps=(9000, 9100, 8950)),
                   case_doc("frozen", "none", False, "plain", rps=(12000, 12100, 11900)),
                   case_doc("old", "none", False, "plain", rps=(500, 510, 505))])
    doc["verification"] = {
        "fast/none/raw": {"passed": True, "reason": "", "conformance": {"none": verdicts()}},
        "frozen/none/raw": {"passed": True, "reason": "", "conformance": {"none": FROZEN}},
        "old/none/raw": {"passed": True, "reason": ""}}          # from before the checks
    return doc


def test_a_failing_server_is_ranked_as_measured_and_marked_in_a_note():
    doc = conformance_doc()
    [table] = tables.build_tables(doc)
    rows = {r.server: r for r in table.rows}
    assert [r.server for r in table.rows] == ["frozen", "fast", "old"]   # still measured
    assert rows["frozen"].conformance == FROZEN and rows["old"].conformance is None
    assert table.notes == [f"frozen: HTTP conformance {cell(FROZEN)}, see the verification "
                           "report"]
    assert rows["frozen"].notes == [1] and rows["fast"].notes == []
    md = formats.to_markdown([table], doc)
    header = next(line for line in md.splitlines() if line.startswith("| test_name"))
    assert "HTTP conformance" not in header                      # not a column by default
    assert "[1]" in next(line for line in md.splitlines() if "| frozen" in line)


def test_the_conformance_column_and_its_csv_and_json_figures():
    doc = conformance_doc()
    built = tables.build_tables(doc)
    md = formats.to_markdown(built, doc, ["conformance"])
    cells = {line.split("|")[2].strip(): line.split("|")[-2].strip()
             for line in md.splitlines() if line.startswith("| plain")}
    assert cells == {"frozen": cell(FROZEN), "fast": cell(verdicts()), "old": "-"}
    parsed = list(csv.DictReader(io.StringIO(formats.to_csv(built, doc, ["conformance"]))))
    assert {r["webserver_name"]: r["HTTP conformance"] for r in parsed} == {
        "frozen": cell(FROZEN), "fast": cell(verdicts()), "old": ""}
    rows = json.loads(formats.to_json(built, doc))["tables"][0]["rows"]
    assert {r["server"]: r.get("conformance") for r in rows} == {
        "frozen": FROZEN, "fast": verdicts(), "old": None}


def test_a_run_without_verdicts_has_no_conformance_column_even_when_asked():
    doc = run_doc([case_doc("fast", "none", False, "plain", rps=(9000, 9100, 8950))])
    built = tables.build_tables(doc)
    assert formats.to_markdown(built, doc, ["conformance"]) == formats.to_markdown(built, doc)
    assert "conformance" not in json.loads(formats.to_json(built, doc))["tables"][0]["rows"][0]


def test_behind_a_proxy_the_row_shows_the_proxys_verdicts():
    doc = run_doc([case_doc("fast", "none", False, "plain", rps=(9000, 9100, 8950))])
    doc["verification"] = {"fast/none/raw": {"passed": True, "reason": "", "conformance": {
        "none": FROZEN, "nginx": verdicts()}}}
    case = doc["cases"][0]
    assert tables.conformance_of(doc, case, "nginx") == verdicts()
    assert tables.conformance_of(doc, case, "none") == FROZEN
    assert tables.conformance_of(doc, case, "haproxy") is None


def test_a_proxys_h2spec_verdict_is_shared_by_the_servers_behind_it():
    # "own" speaks h2 itself (checked on its own listener: none@h2); the nginx@h2 verdict
    # was recorded for "other", which nginx terminated h2 for: the proxy's HTTP/2 is the
    # same whichever server is behind it, so own's rows behind nginx show it too
    own = case_doc("own", "none", False, "plain", rps=(9000, 9100, 8950))
    own["key"].update(protocol="h2", streams=1)
    doc = run_doc([own])
    h2spec = {"h2spec": {"verdict": "fail", "passed": 120, "applicable": 145}}
    doc["verification"] = {"own/none/raw": {"conformance": {"none@h2": {"h2spec": {}}}},
                           "other/none/raw": {"conformance": {"nginx@h2": h2spec}}}
    assert tables.conformance_of(doc, own, "nginx") == h2spec
    assert tables.conformance_of(doc, own, "none") == {"h2spec": {}}
    assert tables.conformance_of(doc, own, "haproxy") is None      # nobody went through it


def test_report_html_details_every_verdict_that_is_not_a_pass(tmp_path):
    from bench.report import html
    doc = conformance_doc()
    page = html.write(doc, tables.build_tables(doc), tmp_path).read_text()
    assert "<h3>HTTP conformance</h3>" in page
    assert "frozen/none/raw, date: fail: Date stayed &#x27;x&#x27; for 4.1 s (frozen)" in page
    assert "frozen/none/raw, keep-alive-1.0: n/a: declines HTTP/1.0 keep-alive" in page
    assert "fast/none/raw, date" not in page
    assert "old/none/raw</td>" not in page.split("<h3>HTTP conformance</h3>")[1]
