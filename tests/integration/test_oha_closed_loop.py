"""Real oha 1.16 in the closed loop (no -q, no --latency-correction) against a real
server (servers/nginx, the ceiling: no build, no database), through the Generator seam
as a run calls it, beside wrk on the same case.

Runs servers and puts load on them: run under the shared lock,
    flock /tmp/webbench-load.lock .venv/bin/python -m pytest tests/integration/test_oha_closed_loop.py
Needs oha and wrk on PATH (`make setup`): without them the tests fail with the install
hint instead of skipping. About 10 s.
"""
from __future__ import annotations

import pytest

from bench.setup.install import install
from bench.core import histogram, manifest
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra.lifecycle import running_server
from bench.infra.server import log_tail
from bench.load import for_request, oha, wrk
from bench.load.generator import LoadRequest
from tests.conftest import TEST_SERVER_PORT

# `make test-all` only: every load generator besides wrk
pytestmark = [pytest.mark.integration, pytest.mark.full]
SETTINGS = Settings(workers=2, db_connections=4, port=TEST_SERVER_PORT)


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    failure = install("oha")   # built on first use, as a run does (bench.setup.install)
    assert failure is None, failure
    oha.require_oha()     # a missing oha fails here, with the install hint
    logs = tmp_path_factory.mktemp("oha-closed")
    with running_server(Variant(manifest.discover()["nginx"], "none", False), SETTINGS,
                        None, logs / "nginx.log") as running:
        yield running.server.base_url
        assert running.server.alive(), log_tail(logs / "nginx.log")


def request(url: str, test: str = "plain", **kwargs) -> LoadRequest:
    return LoadRequest(test, url, **{"connections": 8, "threads": 1, "duration_s": 2.0,
                                     "timeout_s": 5.0, "seed": 3, "token": "hardcoded_token",
                                     **kwargs})


def test_closed_loop_through_the_seam(server_url):
    closed = request(server_url)
    generator = for_request(closed, closed_loop="oha")
    result = generator.run(closed)
    s = result.summary
    assert "-q" not in result.command and "--latency-correction" not in result.command
    assert result.exit_code == 0 and generator.describe(closed, result) == {}
    assert "rate" not in s and "latency_uncorrected_ms" not in s
    assert s["requests"] == s["sent"] > 100 and s["errors"]["total"] == 0, s["errors"]
    assert s["requests_per_sec"] == pytest.approx(s["requests"] / s["duration_s"])
    # the window, plus at most the last requests' timeout (and slack for a busy machine)
    assert closed.duration_s <= s["duration_s"] < closed.duration_s + closed.timeout_s + 1
    assert s["bytes"] > 0
    latency = s["latency_ms"]
    assert 0 < latency["min"] <= latency["p50"] <= latency["p99"] <= latency["max"]
    # the whole distribution from the dump (no due times: each latency from its send)
    assert "latency_histogram_error" not in s, s.get("latency_histogram_error")
    assert histogram.from_record(s["latency_histogram"]).get_total_count() == s["requests"]
    assert result.client_cpu_s > 0 and result.threads == 1 and result.connections == 8
    assert generator.open_connections(8, 1) == 8


def test_closed_loop_is_not_held_to_any_rate(server_url):
    """The same connections in the open model at a low rate send that rate; the closed
    loop sends as fast as the answers come back, far above it."""
    closed = oha.run_oha("plain", server_url, oha.OhaSettings(8, None, 1.0,
                                                              worker_threads=1)).summary
    rated = oha.run_oha("plain", server_url, oha.OhaSettings(8, 100, 1.0,
                                                             worker_threads=1)).summary
    # paced: at most the 100 due in the 1 s window (whether all went out is the rate
    # tests' job, run alone: a busy machine may leave some unsent)
    assert 50 < rated["requests"] <= 101, rated
    # the same 1 s window: the closed loop is not held to the rate
    assert closed["requests"] > 5 * rated["requests"], (closed, rated)


def test_same_keys_and_units_as_wrk_on_the_same_case(server_url):
    closed = request(server_url, "to json", duration_s=1.0)
    ours = for_request(closed, closed_loop="oha").run(closed).summary
    theirs = for_request(closed).run(closed).summary
    assert for_request(closed) is wrk.WRK
    assert set(ours) - {"latency_histogram_error"} == set(theirs) - {"latency_histogram_error"}
    assert set(ours["latency_ms"]) == set(theirs["latency_ms"])
    assert set(ours["errors"]) == set(theirs["errors"])
    for s in (ours, theirs):
        assert s["errors"]["total"] == 0 and s["requests"] > 100
        assert 0 < s["latency_ms"]["p50"] < 1000        # milliseconds, both


def test_connection_close_and_a_wrong_token_in_the_closed_loop(server_url):
    s = oha.run_oha("plain", server_url, oha.OhaSettings(4, None, 1.0, token="nope",
                                                         connection_close=True,
                                                         worker_threads=1)).summary
    assert s["requests"] > 0 and s["errors"]["status"] == s["requests"]
