"""--server-memory end to end: under one cap, a server that needs more at start
(known_footprint, 200 MiB) and one that outgrows it under load (grows_under_load, 8 MiB per
connection) are each killed by the kernel and recorded as a failed sample with the
reason, while a small server (tunable_cost) is measured with the cap's own account of its
memory; the run goes on and its header says the cap."""
from __future__ import annotations

import os

import pytest

from bench.infra.host import LOCAL
from bench.infra.memory_cap import why_not
from bench.storage import results
from tests.e2e.test_run_bench import FIXTURES, PORTS, only_run, run_bench

WHY_NOT = why_not(LOCAL, 64)
pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(WHY_NOT is not None, reason=f"no memory cap here: {WHY_NOT}")]
CAP_MB = 128
CONNECTIONS = 32          # x 8 MiB: twice the cap


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_a_cap_smaller_than_a_servers_need_fails_its_sample_by_the_oom_killer(tmp_path):
    out = run_bench("--servers", "tunable_cost,known_footprint,grows_under_load",
                    "--servers-dir", str(FIXTURES), "--tests", "plain", "--no-ceiling",
                    "--repeat", "1", "--duration", "1.5", "--warmup", "0",
                    "--connections", str(CONNECTIONS), "--server-memory", f"{CAP_MB}M",
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 1, out.stdout[-4000:] + out.stderr[-4000:]
    doc = only_run(tmp_path)
    assert doc["status"] == "complete" and doc["settings"]["server_memory"] == f"{CAP_MB}M"
    sample = {c["server"]: c["samples"][0] for c in doc["cases"]}
    oom = f"killed by the kernel's OOM killer: the memory cap of {CAP_MB} MiB"
    # at start, before it ever answered: the verification's start failed
    assert sample["known_footprint"]["status"] == "failed"
    assert "exited with code -9 before it was ready" in sample["known_footprint"]["reason"]
    assert oom in sample["known_footprint"]["reason"]
    # under load, in the measured window: its sample failed, with the cap's account of it
    grown = sample["grows_under_load"]
    assert grown["status"] == "failed", grown["reason"]
    assert grown["reason"].startswith("server exited during the run (code -9): " + oom)
    cap = grown["server_process"]["memory_cap"]
    assert cap["oom_kills"] >= 1 and CAP_MB - 1 <= cap["peak_mb"] <= CAP_MB + 1
    # within it: measured, and the cap's figures say what it held
    small = sample["tunable_cost"]
    assert small["status"] == "ok", small["reason"]
    cap = small["server_process"]["memory_cap"]
    assert cap["limit_mb"] == CAP_MB and cap["oom_kills"] == 0
    assert 0 < cap["anon_mb"] <= cap["peak_mb"] < CAP_MB
    tables = (results.latest_run(tmp_path) / "tables.md").read_text()
    assert f"Memory cap: every server's process tree at {CAP_MB}M (" in tables
    assert "2 sample(s) failed by the kernel's OOM killer (the server or proxy killed, or a " \
           "process of it)." in tables
    # every capped cgroup was removed with its server, and so was the harness's folder
    capped = cap_path(doc)
    assert capped.endswith("-server") and not os.path.exists(os.path.dirname(capped))


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_a_capped_proxy_is_measured_with_its_cgroups_own_account(tmp_path):
    """--proxy-memory: nginx in front, born in its own cap; within it, measured, and the
    cap's account of the proxy stored beside the sample (the OOM kill of a proxy that
    outgrows its cap: tests/integration/test_memory_cap.py)."""
    out = run_bench("--servers", "tunable_cost", "--servers-dir", str(FIXTURES),
                    "--tests", "plain", "--no-ceiling", "--behind", "nginx", "--repeat", "1",
                    "--duration", "1", "--warmup", "0", "--connections", "8",
                    "--proxy-memory", "64M", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    doc = only_run(tmp_path)
    assert doc["settings"]["proxy_memory"] == "64M" and "server_memory" not in doc["settings"]
    [sample] = doc["cases"][0]["samples"]
    assert sample["status"] == "ok", sample["reason"]
    cap = sample["proxy_memory_cap"]
    assert cap["limit_mb"] == 64 and cap["oom_kills"] == 0
    assert 0 < cap["anon_mb"] <= cap["peak_mb"] < 64
    assert "memory_cap" not in sample["server_process"] or \
        sample["server_process"]["memory_cap"] is None
    tables = (results.latest_run(tmp_path) / "tables.md").read_text()
    assert "Memory cap: every proxy's at 64M (" in tables


def cap_path(doc: dict) -> str:
    """Where the run's capped cgroups were: named in the log line that started a server."""
    for case in doc["cases"]:
        for sample in case["samples"]:
            tail = sample.get("log_tail") or ""
            for word in tail.split():
                if word.endswith("/cgroup.procs"):
                    return os.path.dirname(word)
    return ""
