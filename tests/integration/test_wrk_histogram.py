"""Real wrk's whole latency distribution: a 1 s window against a small stdlib server with
a slow tail (tests/fixtures/histograms/tail_server.py: every 25th answer 20 ms late).

Puts load on the machine: run under the shared lock,
    flock /tmp/webbench-load.lock .venv/bin/python -m pytest tests/integration/test_wrk_histogram.py
About 2 s.
"""
from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from bench.core import histogram
from bench.load.wrk import LoadSettings, run_wrk
from tests.conftest import TEST_SERVER_PORT

pytestmark = pytest.mark.integration
TAIL_SERVER = Path(__file__).resolve().parents[1] / "fixtures" / "histograms" / "tail_server.py"


@pytest.fixture(scope="module")
def tail_url():
    url = f"http://127.0.0.1:{TEST_SERVER_PORT}"
    server = subprocess.Popen([sys.executable, str(TAIL_SERVER), str(TEST_SERVER_PORT)],
                              env={"TAIL_EVERY": "25", "TAIL_MS": "20"},
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        ready = server.stdout.readline()        # printed once the port is bound
        assert ready.strip() == "listening", f"the tail server did not start: {ready!r}"
        yield url
    finally:
        server.terminate()
        server.wait(10)


def test_a_real_wrk_sample_carries_its_whole_distribution(tail_url):
    result = run_wrk("plain", tail_url, LoadSettings(threads=1, connections=4, duration_s=1,
                                                     timeout_s=10))
    s = result.summary
    assert s["requests"] > 100 and "latency_histogram_error" not in s
    assert result.raw["latency_counts"]["read"] == "ffi"      # the linear read, not the walk
    hist = histogram.from_record(s["latency_histogram"])
    # wrk's counters hold its coordinated-omission correction too: at least one per answer
    assert hist.get_total_count() >= s["requests"]
    for key, p in (("p50", 50), ("p99", 99)):
        # wrk reads p at rank round(p/100 * count + 0.5) of its per-µs counters (stats.c)
        rank = math.floor(p / 100 * hist.get_total_count() + 1.0)
        ours = hist.get_value_at_percentile(100.0 * rank / hist.get_total_count())
        theirs = result.raw["latency_us"][key]
        assert abs(ours - theirs) < histogram.resolution_us(theirs), (key, ours, theirs)
    assert s["latency_ms"]["p99"] > 15           # the tail is there: 4 % answered 20 ms late
