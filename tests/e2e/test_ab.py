"""`run_bench.py ab` end to end: two versions of a fixture server whose per-request CPU
cost each version's manifest sets, measured in one sitting with real wrk. No real server
is edited: the versions are two folders holding copies of the fixture.

Only the test that judges a slowdown measures (serial phase); a candidate that cannot
start is broken whatever the machine's speed, so that test runs in the parallel phase
with the fewest samples ab accepts."""
from __future__ import annotations

import json

import pytest

from tests.e2e.test_run_bench import PORTS, run_bench
from tests.fixtures.versions import version

pytestmark = pytest.mark.e2e
# 6 samples per version: three ABBA/BAAB blocks, the fewest a verdict rests on. No
# warm-up: the fixture's cost per request is fixed from its first request on.
SHORT = ["--tests", "plain", "--duration", "1", "--warmup", "0", "--connections", "8", *PORTS]


def run_ab(tmp_path, a, b, *extra):
    out = run_bench("ab", str(a), str(b), *SHORT, *extra, "--results-dir", str(tmp_path / "r"),
                    "--format", "json", "--output", str(tmp_path / "ab.json"))
    verdicts = json.loads((tmp_path / "ab.json").read_text()) if out.returncode != 2 else None
    return out, verdicts


def stored_run(tmp_path):
    run_dir = next((tmp_path / "r" / "ab").glob("*/*/results.json")).parent
    return json.loads((run_dir / "results.json").read_text()), (run_dir / "ab.md").read_text()


@pytest.mark.measure
def test_ab_flags_the_slowed_server_and_measures_only_what_changed(tmp_path):
    a = version(tmp_path / "a", {"steady": "300", "slowed": "300"})
    b = version(tmp_path / "b", {"steady": "300", "slowed": "900"})
    out, verdicts = run_ab(tmp_path, a, b, "--repeat", "6")
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    assert verdicts["servers"] == ["slowed"]   # steady's folder is the same in both
    row, = verdicts["cases"]
    # three times the CPU per request: slower, by req/s or by cost (CPU per request, the
    # quieter figure). With three blocks one noisy block can leave req/s's t-test above
    # alpha on a busy machine (seen once: cost moved alone), so either is the verdict's
    assert row["verdict"] == "slower" and {"req/s", "cost"} & set(row["moved"]), row
    rps = row["figures"][0]
    assert rps["change"] < -0.2 and rps["blocks"] == 3
    stored, md = stored_run(tmp_path)
    assert stored["ab"]["pairs"] == [["slowed@A/none/raw/plain@c8", "slowed@B/none/raw/plain@c8"]]
    assert md.startswith("<!-- webbench-ab -->") and "**SLOWER**" in md
    # the stored order is the paired schedule: blocks of ABBA or BAAB
    arms = "".join(e.split("/")[0][-1] for e in stored["schedule"]["order"])
    assert len(arms) == 12 and {arms[i:i + 4] for i in range(0, 12, 4)} <= {"ABBA", "BAAB"}


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_ab_calls_a_candidate_that_stopped_starting_broken(tmp_path):
    a = version(tmp_path / "a", {"steady": "100", "stops": "100"})
    b = version(tmp_path / "b", {"steady": "100", "stops": "100"}, start_fails="stops")
    out, verdicts = run_ab(tmp_path, a, b, "--repeat", "2")
    assert out.returncode == 3, out.stdout[-3000:] + out.stderr[-3000:]
    row, = verdicts["cases"]
    assert row["server"] == "stops" and row["verdict"] == "broken"
    assert "on the candidate: 2 of 2 samples failed: cannot start stops" in row["reason"]
    assert "**BROKEN**" in stored_run(tmp_path)[1]


def test_ab_with_nothing_changed_measures_nothing_and_says_so(tmp_path):
    a = version(tmp_path / "a", {"steady": "100"})
    b = version(tmp_path / "b", {"steady": "100"})
    out = run_bench("ab", str(a), str(b), *SHORT, "--repeat", "6",
                    "--results-dir", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Nothing to measure" in out.stdout and not (tmp_path / "r").exists()
