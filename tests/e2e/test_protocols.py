"""One server per way of speaking a protocol, end to end (docs/protocols.md): gin over TLS
and HTTP/2 on its own listeners (Go's crypto/tls and HTTP/2, its manifest's `protocols`)
and a fixture that speaks none of them through the nginx proxy, with real wrk and h2load,
in one run; verified over each protocol first (h2spec's counts for gin's own h2 and for
the proxy's), every sample ok, what was negotiated stored, a table per protocol and the
rows saying which endpoint terminated it."""
from __future__ import annotations

import re

import pytest

from tests.e2e.test_modes import only_run_dir
from tests.e2e.test_run_bench import FIXTURES, PORTS, only_run, run_bench

# full: make test-all; the everyday tier's tests run its lines of bench/ (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.full]

OWN, PROXIED = "gin", "tunable_cost"


def test_a_server_over_its_own_tls_and_h2_and_one_through_the_terminating_proxy(tmp_path):
    out = run_bench("--servers", f"{OWN},{PROXIED}", "--servers-dir", str(FIXTURES),
                    "--tests", "plain", "--protocol", "h1,h1-tls,h2", "--streams", "4",
                    "--connections", "8", "--repeat", "1", "--duration", "1",
                    "--warmup", "0.5", "--no-ceiling", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-3000:]
    doc = only_run(tmp_path)
    cases = {c["id"]: c for c in doc["cases"]}
    assert set(cases) == {f"{OWN}/none/raw/plain@c8", f"{OWN}/none/raw/plain@c8@h1-tls",
                          f"{OWN}/none/raw/plain@c8@h2-m4",
                          f"{PROXIED}/none/raw/plain@c8",
                          f"{PROXIED}/none/raw/plain@c8@h1-tls@behind-nginx",
                          f"{PROXIED}/none/raw/plain@c8@h2-m4@behind-nginx"}
    for case_id, case in cases.items():
        assert case["status"] == "ok", (case_id, case["reason"])
        sample = case["samples"][0]
        assert sample["summary"]["errors"]["total"] == 0 and sample["summary"]["requests"] > 0
        generator = sample["generator"]
        protocol = case["key"].get("protocol", "h1")
        proxied = case["key"]["proxy"] == "nginx"
        assert proxied == (case["key"]["server"] == PROXIED and protocol != "h1")
        # the edge's CPU where a proxy terminated the protocol, as --behind's
        assert ("proxy" in sample["resources"]) == proxied
        if protocol == "h1":
            assert generator["name"] == "wrk"
        elif protocol == "h1-tls":
            assert generator["name"] == "wrk"
            assert any(a.startswith("https://") for a in generator["command"])
        else:
            assert generator["name"] == "h2load"
            assert generator["negotiated"]["protocols"] == [protocol]
            assert generator["streams"] == case["key"]["streams"] == 4
            # every response h2load logged; its log may lack the few its report counted
            # as the window closed, which the summary then says
            summary = sample["summary"]
            logged = summary["latency_histogram"]["count"]
            assert 0 < summary["requests"] - logged <= 8 * 4 \
                or logged == summary["requests"], (logged, summary["requests"])
            assert (logged == summary["requests"]) != ("latency_histogram_error" in summary)
    for server, where in ((OWN, "on its own listener"), (PROXIED, "through the nginx proxy")):
        checks = {c["name"]: c for c in doc["verification"][f"{server}/none/raw"]["checks"]}
        for protocol in ("h1-tls", "h2"):
            check = checks[f"protocol {protocol}"]
            assert check["passed"] and check["detail"].startswith(where), check
            assert checks[f"protocol {protocol}: ALPN refusal"]["passed"]
        assert "TLS_AES_128_GCM_SHA256" in checks["protocol h2"]["detail"]
    # h2spec against gin's own HTTP/2 (the direct endpoint) and against the proxy's
    counts = {OWN: doc["verification"][f"{OWN}/none/raw"]["conformance"]["none@h2"]["h2spec"],
              PROXIED: doc["verification"][f"{PROXIED}/none/raw"]["conformance"][
                  "nginx@h2"]["h2spec"]}
    assert all(144 <= c["applicable"] <= 145 and c["passed"] > 100 for c in counts.values()), \
        counts
    md = (only_run_dir(tmp_path) / "tables.md").read_text()
    assert "## plain (8 connections, keep-alive, h2, 4 streams, behind nginx, h2load)" in md
    assert "## plain (8 connections, keep-alive, h1-tls, behind nginx)" in md
    own_h2 = md.split("## plain (8 connections, keep-alive, h2, 4 streams, h2load)")[1]
    assert f"{counts[OWN]['passed']}/{counts[OWN]['applicable']}" in own_h2.split("##")[0]
    # against h1 direct, in the same rounds: a row per server and protocol, saying which
    # endpoint terminated it
    tls = md.split("## plain: what TLS costs (8 connections, keep-alive)")[1].split("##")[0]
    gives = md.split("## plain: what HTTP/2 gives (8 connections, keep-alive)")[1]

    def row(server: str, protocol: str, text: str) -> bool:
        return re.search(rf"\| {server} +\| {protocol} +\| h1 direct +\|", text) is not None
    assert row(OWN, "h1-tls, native", tls) and row(PROXIED, "h1-tls, behind nginx", tls)
    assert row(OWN, "h2, 4 streams, native", gives) and \
        row(PROXIED, "h2, 4 streams, behind nginx", gives)
