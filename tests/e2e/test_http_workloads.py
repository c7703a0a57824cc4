"""The HTTP workloads (#51) through run_bench.py: a pipelined run of the correct fixture
stores what ran (the depth in the case's key and in the generator's record, every
request counted), shows the gain over plain, and a server that answers a batch out of
order is refused before any load, with the reason."""
from __future__ import annotations

import pytest

from tests.e2e.test_run_bench import FIXTURES, PORTS, only_run, run_bench

pytestmark = pytest.mark.e2e


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_a_pipelined_run_stores_its_depth_and_refuses_an_out_of_order_server(tmp_path):
    out = run_bench("--servers", "http_workloads,broken_pipelining_order", "--servers-dir",
                    str(FIXTURES), "--tests", "plain,pipelined", "--pipeline", "8",
                    "--no-ceiling", "--repeat", "1", "--duration", "1", "--warmup", "0",
                    "--connections", "4", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-2000:]
    doc = only_run(tmp_path)
    assert doc["settings"]["pipeline"] == 8
    cases = {(c["server"], c["test"]): c for c in doc["cases"]}
    piped = cases[("http_workloads", "pipelined")]
    assert piped["status"] == "ok", piped["reason"]
    assert piped["key"]["pipeline"] == 8 and piped["id"].endswith("/pipelined@c4@pipeline8")
    sample = piped["samples"][0]
    assert sample["generator"]["pipeline"] == 8 and "pipeline=8" in sample["generator"]["command"]
    assert sample["summary"]["errors"]["total"] == 0
    assert 0 <= sample["summary"]["sent"] - sample["summary"]["requests"] <= 4 * 8
    broken = cases[("broken_pipelining_order", "pipelined")]
    assert broken["status"] == "verification failed"
    assert "out of order" in broken["reason"], broken["reason"]
    assert "pipelined, 4 connections" not in out.stdout      # one load point: no suffix
    tables = (next(tmp_path.rglob("tables.md"))).read_text()
    assert "pipelined 8 deep (latency per batch)" in tables
    assert "http_workloads: " in tables and "its plain req/s" in tables


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_static_upload_delay_and_compression_run_and_a_declared_gap_is_shown(tmp_path):
    """The correct fixture measured on every HTTP workload, compressed too; a copy of it
    that declares delay unsupported is left out of delay only, and its row says why."""
    servers = tmp_path / "servers"
    (servers / "nodelay").mkdir(parents=True)
    text = (FIXTURES / "http_workloads" / "manifest.toml").read_text()
    (servers / "nodelay" / "manifest.toml").write_text(
        text.replace('id = "http_workloads"', 'id = "nodelay"')
        .replace("{dir}/../../http_defects", str(FIXTURES.parent / "http_defects"))
        + '\n[unsupported]\ndelay = "a fixture that says it cannot wait"\n')
    out = run_bench("--servers", "http_workloads,nodelay", "--servers-dir", str(FIXTURES),
                    "--servers-dir", str(servers), "--tests", "to_json,static,upload,delay",
                    "--size", "64k", "--compression", "gzip", "--no-ceiling", "--repeat", "1",
                    "--duration", "1", "--warmup", "0", "--connections", "4",
                    "--results-dir", str(tmp_path / "results"), *PORTS)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    doc = only_run(tmp_path / "results")
    assert {c["status"] for c in doc["cases"]} == {"ok"}
    ids = {c["id"].split("/", 3)[-1] for c in doc["cases"] if c["server"] == "http_workloads"}
    assert ids == {"to_json@c4", "to_json@c4@gzip", "static_64k@c4", "static_64k@c4@gzip",
                   "upload_64k@c4", "delay@c4"}
    assert not any(c["server"] == "nodelay" and c["test"] == "delay" for c in doc["cases"])
    assert doc["not_supported"] == [{"server": "nodelay", "test": "delay",
                                     "reason": "a fixture that says it cannot wait"}]
    checks = {c["name"] for c in doc["verification"]["http_workloads/none/raw"]["checks"]}
    assert {"static", "upload", "delay", "compression"} <= checks
    assert "delay" not in {c["name"] for c in doc["verification"]["nodelay/none/raw"]["checks"]}
    gzip = next(c for c in doc["cases"] if c["id"].endswith("static_64k@c4@gzip")
                and c["server"] == "http_workloads")
    plain = next(c for c in doc["cases"] if c["id"].endswith("static_64k@c4")
                 and c["server"] == "http_workloads")
    per = [c["samples"][0]["summary"]["bytes"] / c["samples"][0]["summary"]["requests"]
           for c in (gzip, plain)]
    assert per[0] < per[1] / 2                          # text of 64 KiB compresses
    assert "Accept-Encoding: gzip" in gzip["samples"][0]["generator"]["command"]
    tables = next((tmp_path / "results").rglob("tables.md")).read_text()
    assert "not supported: a fixture that says it cannot wait" in tables
    assert "B per answer on the wire" in tables and "## static 64k" in tables
    assert doc["environment"]["kernel_settings"]["net.core.somaxconn"]


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_static_and_websocket_over_tls_and_http2_through_the_terminating_proxy(tmp_path):
    """The fixture speaks HTTP/1.1 only: over h1-tls and h2 the run puts nginx in front
    (--tls-proxy), which serves the static file's bytes over each and carries the
    WebSocket upgrade over TLS (wss), verified there before any load."""
    out = run_bench("--servers", "http_workloads", "--servers-dir", str(FIXTURES),
                    "--tests", "static,websocket", "--size", "64k,32b",
                    "--protocol", "h1,h1-tls,h2", "--no-ceiling", "--repeat", "1",
                    "--duration", "1", "--warmup", "0", "--connections", "4",
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    doc = only_run(tmp_path)
    cases = {c["id"].split("/", 3)[-1]: c for c in doc["cases"]}
    assert {c["status"] for c in cases.values()} == {"ok"}, \
        {i: c["reason"] for i, c in cases.items() if c["status"] != "ok"}
    static = {i: c for i, c in cases.items() if i.startswith("static_64k")}
    assert len(static) == 3 and {c["samples"][0]["generator"]["name"]
                                 for c in static.values()} == {"wrk", "h2load"}
    for case in static.values():
        summary = case["samples"][0]["summary"]
        assert summary["errors"]["total"] == 0
        # every answer the file's 64 KiB (HTTP/2's frames and HPACK are smaller than h1's
        # header, never larger than the body)
        assert 65536 <= summary["bytes"] / summary["requests"] < 65536 + 1024, case["id"]
    ws = {i: c for i, c in cases.items() if i.startswith("websocket")}
    # no WebSocket over HTTP/2: the h2 point measures static only
    # 32b and 64k messages (--size gives each sized test the sizes it has), h1 and h1-tls
    assert len(ws) == 4 and all(c["samples"][0]["generator"]["name"] == "wsload"
                                for c in ws.values())
    assert any("wss://" in " ".join(c["samples"][0]["generator"]["command"])
               for c in ws.values())
    checks = {c["name"]: c for c in doc["verification"]["http_workloads/none/raw"]["checks"]}
    over_tls = [c for name, c in checks.items() if name.startswith("websocket over h1-tls")]
    assert over_tls and all(c["passed"] for c in over_tls), over_tls
