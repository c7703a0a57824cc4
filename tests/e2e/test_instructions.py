"""--instructions end to end, with real callgrind, strace and wrk: `ab` flags deterministic
work planted in a fixture server (a loop of K iterations, never a clock) and names the
function that grew, while two counts of the same code give no verdict; the nightly job
gives a pair of nights of the same code no instruction verdict and flags a night with
planted work; a runtime that cannot be counted is named as such.

The counts do not judge speed (a busy machine slows them, it does not change them), so
these run in the parallel phase; the whole runs are make test-all's (full)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from bench.paths import REPO
from bench.storage import results
from tests.e2e.test_run_bench import FIXTURES, PORTS, run_bench
from tests.fixtures.versions import version

pytestmark = pytest.mark.e2e
# the load is not what these test: the fewest samples ab and a run accept
LOAD = ["--tests", "plain", "--duration", "1", "--warmup", "0", "--connections", "8", *PORTS]
COUNT = ["--instructions", "--instructions-requests", "200"]
# the fixture answers plain in some 330,000 instructions; 12 iterations of the planted
# loop add about 1 % (100 added 9.3 % here, under callgrind)
PLANTED_K = 12


def ab(tmp_path, a, b, *extra):
    out = run_bench("ab", str(a), str(b), *LOAD, *COUNT, "--repeat", "2", *extra,
                    "--results-dir", str(tmp_path / "r"), "--format", "json",
                    "--output", str(tmp_path / "ab.json"))
    assert out.returncode != 2, out.stderr[-3000:]
    return out, json.loads((tmp_path / "ab.json").read_text())


def instructions_of(row: dict) -> dict:
    return next(f for f in row["figures"] if f["figure"] == "instructions")


@pytest.mark.full
def test_ab_flags_planted_work_names_its_function_and_gives_the_same_code_no_verdict(tmp_path):
    a = version(tmp_path / "a", {"planted": "0"})
    b = version(tmp_path / "b", {"planted": "0"}, loops={"planted": PLANTED_K})
    out, verdicts = ab(tmp_path / "ab", a, b)
    row, = verdicts["cases"]
    found = instructions_of(row)
    assert row["verdict"] == "slower" and "instructions" in row["moved"], out.stdout[-3000:]
    assert out.returncode == 1
    assert 0.006 < found["change"] < 0.02 and found["blocks"] == 2
    python = row["where"]["python"]
    assert ".planted_work " in python[0]["name"] and python[0]["share"] > 0
    md = next((tmp_path / "ab" / "r" / "ab").glob("*/*/ab.md")).read_text()
    assert "### Where the counts moved" in md and "planted_work" in md
    # A/A: the same folder as both versions; its counts, two a side, give no verdict
    out, verdicts = ab(tmp_path / "aa", a, a, "--servers", "planted")
    row, = verdicts["cases"]
    found = instructions_of(row)
    assert found["direction"] is None and abs(found["change"]) < 0.002, found
    assert found["noise_floor"] < 0.002


@pytest.mark.full
def test_nightly_gives_the_same_code_no_instruction_verdict_and_flags_planted_work(tmp_path):
    tiny = ["--servers", "tunable_cost", "--servers-dir", str(FIXTURES), "--tests", "plain",
            "--no-ceiling", "--duration", "1", "--warmup", "0.5", "--repeat", "2",
            "--threads", "1", *PORTS, *COUNT]

    def night(**env):
        done = subprocess.run(["bash", str(REPO / "scripts/nightly.sh"), *tiny], cwd=REPO,
                              capture_output=True, text=True, timeout=1200,
                              env={**os.environ, "BENCH_MACHINE_ID": "nightly-instructions",
                                   "NIGHTLY_RESULTS_DIR": str(tmp_path / "results"),
                                   "NIGHTLY_OUT": str(tmp_path / "nightly"), **env})
        compared = tmp_path / "nightly" / "compare.json"
        return done, json.loads(compared.read_text()) if compared.exists() else None

    done, _ = night()                       # calibrates first: two runs, then tonight's
    assert done.returncode == 0, done.stderr[-3000:]
    done, cmp = night()                     # the same code again
    row, = cmp["cases"]
    counted = [f for f in row["figures"] if f["figure"] in ("instructions", "syscalls")]
    assert len(counted) == 2 and all(f["direction"] is None for f in counted), counted
    assert done.returncode == 0, done.stdout[-3000:]
    done, cmp = night(FIXTURE_LOOP_K=str(PLANTED_K))    # a night with ~1 % planted work
    assert done.returncode == 1, done.stdout[-3000:]
    row, = cmp["cases"]
    # the planted work is what the counted figure flags; a clock figure (start-up time,
    # req/s) may move beside it on a busy machine (CI: start-up was listed first)
    counted = next(f for f in row["figures"] if f["figure"] == "instructions")
    assert row["verdict"] == "slower" and counted["direction"] == "worse", row
    assert "instructions +" in (tmp_path / "nightly" / "summary.md").read_text()


def test_a_runtime_that_cannot_be_counted_is_named_not_given_a_zero(tmp_path):
    out = run_bench("--servers", "uncountable", "--servers-dir", str(FIXTURES), "--no-ceiling",
                    *LOAD, "--repeat", "1", "--instructions",
                    "--results-dir", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr[-3000:]
    doc = results.load(results.latest_run(tmp_path / "r"))
    count = doc["cases"][0]["instructions"]
    assert count["status"] == "not countable" and count["runs"] == []
    assert "its runtime stands for one whose signals crash callgrind" in count["reason"]
    tables = (results.latest_run(tmp_path / "r") / "tables.md").read_text()
    assert "| plain  | uncountable | none       | raw   | not countable" in tables
    assert "uncountable none plain: not countable: uncountable: test fixture" in tables
