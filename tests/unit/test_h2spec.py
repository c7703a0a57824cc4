"""h2spec's JUnit report read into the conformance verdict the tables show (bench.verify
.h2spec): counts of passed, skipped and failed cases with the failed cases' ids, the cell
counting a suite's cases, and where an HTTP/2 endpoint's verdicts are kept."""
import json
from pathlib import Path

import jsonschema
import pytest

from bench.core.conformance import FAIL, PASS, cell, endpoint
from bench.verify import h2spec

REPORT = Path(__file__).parents[1] / "fixtures" / "h2spec" / "junit_nginx_1.22.xml"
SCHEMA_FILE = Path(__file__).parents[2] / "bench" / "storage" / "schema" / "results.schema.json"


def test_the_report_of_a_real_run_gives_counts_and_the_failed_cases_by_id():
    # h2spec 2.2.1 against nginx 1.22.1 over h2c: "145 tests, 117 passed, 1 skipped, 27 failed"
    result = h2spec.parse_report(REPORT.read_text())
    assert (result.tests, result.passed, result.skipped, len(result.failed)) == (145, 117, 1, 27)
    assert result.applicable == 144
    assert "http2/4.2/2 Sends a large size DATA frame that exceeds the " \
           "SETTINGS_MAX_FRAME_SIZE" in result.failed
    assert not any(f.startswith("http2/4.2/1 ") for f in result.failed)
    verdict = result.verdict("nginx over h2c")
    assert verdict["verdict"] == FAIL and (verdict["passed"], verdict["applicable"]) == (117, 144)
    assert verdict["detail"].startswith("h2spec 2.2.1 against nginx over h2c: 117 of 144 "
                                        "cases passed (1 skipped); failed: http2/4.2/2 ")
    assert verdict["detail"].endswith("and 19 more")
    assert verdict["failed"] == result.failed             # all 27, where the detail has 8


def test_a_clean_run_passes_and_an_empty_report_is_an_error():
    clean = h2spec.H2specResult(tests=4, passed=4, skipped=0)
    assert clean.verdict("x")["verdict"] == PASS
    with pytest.raises(h2spec.H2specError, match="no test case"):
        h2spec.parse_report("<testsuites></testsuites>")


def test_the_cell_counts_a_suites_cases_beside_single_checks():
    suite = h2spec.parse_report(REPORT.read_text()).verdict("nginx over h2")
    assert cell({"h2spec": suite}) == "117/144 ✗h2spec"
    assert cell({"h2spec": suite, "date": {"verdict": PASS, "detail": ""}}) == "118/145 ✗h2spec"
    assert endpoint("nginx", "h2") == "nginx@h2" and endpoint("nginx", "h2c") == "nginx@h2c"
    assert endpoint("nginx", "h1-tls") == "nginx" and endpoint("none") == "none"


def test_the_results_schema_takes_a_verdict_with_counts():
    schema = json.loads(SCHEMA_FILE.read_text())
    report = {"passed": True, "conformance": {
        "nginx@h2": {"h2spec": h2spec.parse_report(REPORT.read_text()).verdict("nginx")}}}
    jsonschema.validate(report, {**schema["$defs"]["verification"], "$defs": schema["$defs"]})
    report["conformance"]["nginx@h2"]["h2spec"]["passed"] = -1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(report, {**schema["$defs"]["verification"], "$defs": schema["$defs"]})


def test_a_report_quoting_a_frames_raw_payload_is_still_read():
    # h2spec writes a PING's payload "h2spec\0\0" raw into <error>: not XML 1.0
    text = ('<testsuites><testsuite package="http2/6.7"><testcase package="http2/6.7" '
            'classname="Sends a PING frame"><error>PING Frame (opaque_data:h2spec\x00\x00)'
            '</error></testcase></testsuite></testsuites>')
    assert h2spec.parse_report(text).failed == ["http2/6.7/1 Sends a PING frame"]
