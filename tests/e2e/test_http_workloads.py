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
