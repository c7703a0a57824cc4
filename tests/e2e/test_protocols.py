"""One server over every protocol, end to end (docs/protocols.md): gin's plain through the
nginx proxy over TLS, HTTP/2 and h2c, with real wrk and h2load; verified over each
protocol first (h2spec's counts for the HTTP/2 ones), every sample ok, what was
negotiated stored, a table per protocol."""
from __future__ import annotations

import re

import pytest

from tests.e2e.test_modes import only_run_dir
from tests.e2e.test_run_bench import PORTS, only_run, run_bench

pytestmark = pytest.mark.e2e


def test_one_server_over_each_protocol_through_the_terminating_proxy(tmp_path):
    out = run_bench("--servers", "gin", "--tests", "plain", "--protocol", "h1,h1-tls,h2,h2c",
                    "--streams", "1,4", "--connections", "8", "--repeat", "1",
                    "--duration", "1", "--warmup", "0.5", "--no-ceiling",
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-3000:]
    doc = only_run(tmp_path)
    cases = {c["id"]: c for c in doc["cases"]}
    assert set(cases) == {"gin/none/raw/plain@c8"} | {
        f"gin/none/raw/plain@c8@{p}@behind-nginx" for p in ("h1-tls", "h2", "h2-m4", "h2c",
                                                            "h2c-m4")}
    for case_id, case in cases.items():
        assert case["status"] == "ok", (case_id, case["reason"])
        sample = case["samples"][0]
        assert sample["summary"]["errors"]["total"] == 0 and sample["summary"]["requests"] > 0
        generator = sample["generator"]
        protocol = case["key"].get("protocol", "h1")
        if protocol == "h1":
            assert generator["name"] == "wrk" and "proxy" not in sample["resources"]
            continue
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
    for protocol in ("h1-tls", "h2"):             # nginx >= 1.21.4 refuses as RFC 7301 says
        assert checks[f"protocol {protocol}: ALPN refusal"]["passed"]
    # h2spec against the proxy over each HTTP/2, its counts in the h2 rows' conformance
    conformance = doc["verification"]["gin/none/raw"]["conformance"]
    counts = {p: conformance[f"nginx@{p}"]["h2spec"] for p in ("h2", "h2c")}
    assert all(144 <= c["applicable"] <= 145 and c["passed"] > 100 for c in counts.values()), \
        counts
    md = (only_run_dir(tmp_path) / "tables.md").read_text()
    assert "## plain (8 connections, keep-alive, h2, 4 streams, behind nginx, h2load)" in md
    assert "## plain (8 connections, keep-alive, h1-tls, behind nginx)" in md
    assert f"{counts['h2']['passed']}/{counts['h2']['applicable']}" in \
        md.split("h2, 4 streams, behind nginx")[1]
    # against h1 direct, in the same rounds: a row per protocol and streams count
    tls = md.split("## plain: what TLS costs (8 connections, keep-alive)")[1].split("##")[0]
    def row(protocol: str, text: str) -> bool:
        return re.search(rf"\| gin +\| {protocol}, behind nginx +\| h1 direct +\|", text) \
            is not None
    assert row("h1-tls", tls)
    gives = md.split("## plain: what HTTP/2 gives (8 connections, keep-alive)")[1]
    assert all(row(p, gives) for p in ("h2, 1 stream", "h2, 4 streams", "h2c, 1 stream",
                                       "h2c, 4 streams"))
