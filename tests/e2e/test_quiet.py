"""A run during which another process hogs a CPU: its samples are marked, the hog named
by its pid; with --strict they are invalid, the run going on. One cheap fixture server,
plain (no database), one-second windows."""
from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from bench.storage import results
from tests.e2e.test_run_bench import FIXTURES, PORTS, run_bench

# full: make test-all; the everyday tier's tests run its lines of bench/ (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.measure, pytest.mark.full]


@pytest.fixture
def hog():
    """A busy loop that is not the harness's (a child of this test, not of run_bench.py),
    returned once it has used CPU, killed after."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = psutil.Process(proc.pid)
        deadline = time.monotonic() + 30
        while sum(busy.cpu_times()[:2]) < 0.1 and time.monotonic() < deadline:
            time.sleep(0.01)            # polling for the event (CPU used), not a fixed wait
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def run_with(tmp_path, name: str, *flags: str, not_ok: int = 0) -> dict:
    out = run_bench("--servers", "tunable_cost", "--servers-dir", str(FIXTURES),
                    "--tests", "plain", "--no-ceiling", "--duration", "1", "--warmup", "0",
                    "--connections", "4", "--results-dir", str(tmp_path / name), *PORTS,
                    *flags)
    said = f"{not_ok} of 1 cases are not ok"
    assert out.returncode == (1 if not_ok else 0) and (not not_ok or said in out.stderr), \
        out.stdout[-3000:] + out.stderr[-3000:]
    return results.load(results.latest_run(tmp_path / name))


def test_a_cpu_hog_marks_the_samples_and_strict_refuses_them(tmp_path, hog):
    doc = run_with(tmp_path, "marked", "--repeat", "2")
    samples = doc["cases"][0]["samples"]
    for sample in samples:
        # the hog spins one of the machine's CPUs: far above the 5 % limit
        assert sample["status"] == "ok"
        assert hog in [p["pid"] for p in sample["noise"]["top"]], sample["noise"]
        assert sample["noise"]["foreign_cpu_share"] > 0.05
        marked = [w for w in sample["warnings"] if w.startswith("foreign load:")]
        assert marked and f"(pid {hog})" in marked[0]
    # the case's note, which the tables number as a footnote
    assert any("foreign load" in w for w in doc["cases"][0]["warnings"])
    readings = doc["environment"]["machine_state"]["readings"]
    assert [r["at"] for r in readings] == ["before the run", "round 2"]
    assert hog in [p["pid"] for p in readings[0]["load"]["top"]]
    assert readings[0]["loopback_mtu"] and "unavailable" in readings[0]["cpu_governor"] \
        or "governors" in readings[0]["cpu_governor"]

    strict = run_with(tmp_path, "strict", "--repeat", "1", "--strict", not_ok=1)
    sample = strict["cases"][0]["samples"][0]
    assert sample["status"] == "invalid" and f"(pid {hog})" in sample["reason"]
    assert sample["reason"].endswith("(--strict)")
