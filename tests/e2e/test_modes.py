"""The measurement modes end to end on short runs: a concurrency sweep with keep-alive
and Connection: close, the nginx ceiling row, CPU placement, a reverse proxy in front,
and latency at fixed request rates with oha. Real servers, databases, wrk, oha, nginx."""
from __future__ import annotations

import os
import re

import pytest

from tests.e2e.test_run_bench import PORTS, only_run, run_bench

pytestmark = pytest.mark.e2e
SHORT = ["--repeat", "1", "--duration", "1", "--warmup", "0"]


def by_key(doc: dict) -> dict:
    return {(c["server"], c["test"], c["key"]["connections"], c["key"]["connection_mode"],
             c["key"]["proxy"], c["key"]["rate"]): c for c in doc["cases"]}


# measure: the kernel's count of connections opened is machine-wide, and beside 3 other
# test workers (under coverage.py) a keep-alive sample of 603 requests saw 307 opened by
# other tests' programs in its 1 s window
@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
@pytest.mark.measure
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="CPU placement needs 2 CPUs")
def test_sweep_close_ceiling_and_placement(tmp_path):
    out = run_bench("--servers", "gin", "--tests", "plain,get_user", "--databases",
                    "postgres", "--orm", "raw", "--connections", "8,32",
                    "--connection-mode", "keep-alive,close", "--server-cpus", "0",
                    "--client-cpus", "1", "--db-cpus", "1", *SHORT,
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-3000:]
    doc = only_run(tmp_path)
    cases = by_key(doc)
    # 2 tests x 2 levels x 2 modes for gin, plain x 2 x 2 for the nginx ceiling
    assert len(cases) == 12
    assert doc["load"]["levels"] == [
        {"connections": 8, "threads": 1, "connections_requested": 8},
        {"connections": 32, "threads": 1, "connections_requested": 32}]
    for (server, test, level, mode, proxy, rate), case in cases.items():
        assert case["status"] == "ok", (case["id"], case["reason"])
        sample = case["samples"][0]
        assert sample["generator"]["connections"] == level
        requests = sample["summary"]["requests"]
        if mode == "close":
            # one new TCP connection per request, and no errors from ports in TIME_WAIT
            assert sample["connections_opened"] >= 0.9 * requests, sample["connections_opened"]
            generator = sample["generator"]
            assert generator["connection_close"] and "Connection: close" in generator["command"]
            assert sample["summary"]["errors"]["total"] == 0
        else:
            # the kernel's counter is machine-wide: other programs' connections add a few
            assert sample["connections_opened"] < 0.5 * requests
        assert sample["server_process"]["cpus"] == [0]
    assert doc["servers"]["nginx"]["reference"] is True
    assert doc["settings"]["server_cpus"] == [0] and doc["settings"]["db_cpus"] == [1]
    md = (only_run_dir(tmp_path) / "tables.md").read_text()
    assert "## plain (8 connections, close)" in md and "## get user (32 connections, keep-alive)" in md
    assert re.search(r"\| nginx \(reference\)\s*\|", md) and re.search(r"\| of ceiling\s*\|", md)
    assert "CPU placement: servers on CPUs 0; load generator on CPUs 1; databases on CPUs 1." in md
    assert "keep-alive and Connection: close" in md


def only_run_dir(results_dir):
    from bench.storage import results
    return results.latest_run(results_dir)


@pytest.mark.full          # oha (--rate): `make test-all`
@pytest.mark.measure       # the latency at each fixed rate and the knee
def test_behind_a_proxy_and_latency_at_fixed_rates(tmp_path):
    out = run_bench("--servers", "gin", "--tests", "plain", "--connections", "16",
                    "--behind", "none,nginx", "--rate", "20%,2000000", "--knee-p99", "50",
                    "--no-ceiling", "--repeat", "1", "--duration", "2", "--warmup", "1",
                    "--results-dir", str(tmp_path), *PORTS)
    doc = only_run(tmp_path)
    cases = by_key(doc)
    assert len(cases) == 2 + 2 * 2, list(cases)
    direct = cases[("gin", "plain", 16, "keep-alive", "none", None)]
    behind = cases[("gin", "plain", 16, "keep-alive", "nginx", None)]
    for case in (direct, behind):
        assert case["status"] == "ok", case["reason"]
    assert "proxy" in behind["samples"][0]["resources"]
    assert "proxy" not in direct["samples"][0]["resources"]
    # a fifth of the closed-loop maximum: oha's open model beside gin on 2 busy cores
    # reached 16,096 of 17,471 req/s at half of it once in CI (an honest "invalid")
    share = cases[("gin", "plain", 16, "keep-alive", "none", "20%")]["samples"][0]
    assert share["status"] == "ok", share["reason"]
    rate = share["summary"]["rate"]
    assert rate["asked"] == pytest.approx(0.2 * direct["stats"]["requests_per_sec"]["median"])
    assert rate["achieved"] >= 0.95 * rate["asked"]
    assert share["generator"]["name"] == "oha" and "--latency-correction" in share["generator"]["command"]
    # a rate no machine here can send is reported as not reached, not stored as a figure
    absurd = cases[("gin", "plain", 16, "keep-alive", "none", "2000000")]["samples"][0]
    assert absurd["status"] == "invalid" and "asked for 2,000,000 req/s" in absurd["reason"]
    assert out.returncode == 1          # the unreachable points are not ok
    md = (only_run_dir(tmp_path) / "tables.md").read_text()
    assert "## plain (16 connections, keep-alive, behind nginx)" in md
    assert "## plain: latency at fixed request rates (16 connections, keep-alive, open model)" in md
    assert "The knee is the highest rate whose p99 stays under 50 ms" in md


@pytest.mark.parametrize("flags, message", [
    (["--connection-mode", "pipelined"], "unknown connection mode 'pipelined'; valid: keep-alive, close"),
    (["--behind", "squid"], "unknown --behind proxy 'squid'; valid: none, caddy, haproxy, nginx"),
    (["--server-cpus", "999"], "--server-cpus 999: CPU 999 is not usable here; valid CPUs: "),
    (["--rate", "0%"], "--rate '0%': give a share"),
    (["--connections", "16,x"], "is not a number or a comma-separated list"),
])
def test_bad_modes_exit_2_with_the_valid_choices(tmp_path, flags, message):
    out = run_bench("--servers", "gin", *flags, "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
    assert message in out.stderr
    assert not list(tmp_path.iterdir())
