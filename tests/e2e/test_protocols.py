"""One server over every protocol, end to end (docs/protocols.md): gin's plain through the
nginx proxy over TLS, HTTP/2 and h2c, with real wrk and h2load; verified over each
protocol first, every sample ok, what was negotiated stored, a table per protocol."""
from __future__ import annotations

import pytest

from tests.e2e.test_modes import only_run_dir
from tests.e2e.test_run_bench import PORTS, only_run, run_bench

pytestmark = pytest.mark.e2e


def test_one_server_over_each_protocol_through_the_terminating_proxy(tmp_path):
    out = run_bench("--servers", "gin", "--tests", "plain", "--protocol", "h1-tls,h2,h2c",
                    "--streams", "1,4", "--connections", "8", "--repeat", "1",
                    "--duration", "1", "--warmup", "0.5", "--no-ceiling",
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-3000:]
    doc = only_run(tmp_path)
    cases = {c["id"]: c for c in doc["cases"]}
    assert set(cases) == {f"gin/none/raw/plain@c8@{p}@behind-nginx" for p in
                          ("h1-tls", "h2", "h2-m4", "h2c", "h2c-m4")}
    for case_id, case in cases.items():
        assert case["status"] == "ok", (case_id, case["reason"])
        sample = case["samples"][0]
        assert sample["summary"]["errors"]["total"] == 0 and sample["summary"]["requests"] > 0
        generator = sample["generator"]
        protocol = case["key"]["protocol"]
        if protocol == "h1-tls":
            assert generator["name"] == "wrk"
            assert any(a.startswith("https://") for a in generator["command"])
        else:
            assert generator["name"] == "h2load"
            assert generator["negotiated"]["protocols"] == [protocol]
            assert generator["streams"] == case["key"]["streams"]
            # every response h2load logged; its log may lack the few its report counted
            # as the window closed, which the summary then says
            summary = sample["summary"]
            logged = summary["latency_histogram"]["count"]
            assert 0 < summary["requests"] - logged <= 8 * case["key"]["streams"] \
                or logged == summary["requests"], (logged, summary["requests"])
            assert (logged == summary["requests"]) != ("latency_histogram_error" in summary)
        assert "proxy" in sample["resources"]           # the edge's CPU, as --behind's
    checks = {c["name"]: c for c in doc["verification"]["gin/none/raw"]["checks"]}
    for protocol in ("h1-tls", "h2", "h2c"):
        assert checks[f"protocol {protocol}"]["passed"], checks[f"protocol {protocol}"]
    assert "TLS_AES_128_GCM_SHA256" in checks["protocol h2"]["detail"]
    md = (only_run_dir(tmp_path) / "tables.md").read_text()
    assert "## plain (8 connections, keep-alive, h2, 4 streams, behind nginx, h2load)" in md
    assert "## plain (8 connections, keep-alive, h1-tls, behind nginx)" in md
