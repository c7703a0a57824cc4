"""scripts/nightly.sh end to end, two nights on a fixture server with tiny settings: the
first calibrates (none yet) and passes; on the second the server no longer starts, and
the script fails saying which case broke."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from bench.paths import REPO
from bench.storage import calibration, results

from tests.e2e.test_run_bench import PORTS

# no speed is judged (the first night has nothing to compare with, the second fails by a
# broken case), so it runs beside other tests, on its worker's ports
# full: make test-all; the everyday tier's tests run its lines of bench/ (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.full]
MACHINE = "nightly-e2e"
# the nightly preset's figures overridden (they come after --preset nightly), one wrk
# thread as every e2e test
TINY = ["--servers", "tunable_cost", "--servers-dir", str(REPO / "tests/fixtures/servers"),
        "--tests", "plain", "--no-ceiling", "--duration", "1", "--warmup", "0.5",
        "--repeat", "2", "--threads", "1", *PORTS]


def night(tmp_path, **env) -> tuple[int, str, str]:
    done = subprocess.run(["bash", str(REPO / "scripts/nightly.sh"), *TINY], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "BENCH_MACHINE_ID": MACHINE,
                               "NIGHTLY_RESULTS_DIR": str(tmp_path / "results"),
                               "NIGHTLY_OUT": str(tmp_path / "nightly"), **env})
    summary = tmp_path / "nightly" / "summary.md"
    return done.returncode, summary.read_text() if summary.exists() else "", done.stderr


def test_nightly_calibrates_the_first_night_and_fails_when_a_server_stopped_starting(tmp_path):
    code, summary, err = night(tmp_path)
    assert code == 0, err[-3000:]
    stored = calibration.load(tmp_path / "results", MACHINE)
    assert stored is not None and len(stored["runs"]) == 2
    assert "made tonight (machine nightly-e2e has no calibration yet)" in summary
    runs = results.run_dirs(tmp_path / "results", MACHINE)
    assert len(runs) == 3                          # the calibration's two, then tonight's
    first = (tmp_path / "nightly" / "run_dir").read_text().strip()
    assert first == str(runs[-1]) and runs[-1].name not in stored["runs"]
    assert "Verdict: exit 0" in summary

    # the second night: the server exits at start (it cannot read its per-request cost)
    code, summary, err = night(tmp_path, FIXTURE_COST_US="not-a-number")
    assert code == 3, err[-3000:]
    assert "Calibration (its per-case thresholds are what compare judges by): the stored " \
           "one" in summary                        # the same settings: not calibrated again
    assert f"Compared with the previous night's run {runs[-1].name}" in summary
    assert "tunable_cost/none/raw/plain@c64: failed (ok the previous night)" in summary
    assert "- a case ok the previous night broke tonight" in summary
    tonight = json.loads((results.run_dirs(tmp_path / "results", MACHINE)[-1]
                          / results.RESULTS_FILE).read_text())
    assert tonight["cases"][0]["status"] == results.FAILED
