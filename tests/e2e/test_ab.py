"""`run_bench.py ab` end to end: two versions of a fixture server whose per-request CPU
cost each version's manifest sets, measured in one sitting with real wrk. No real server
is edited: the versions are two folders holding copies of the fixture."""
from __future__ import annotations

import json

import pytest

from tests.e2e.test_run_bench import PORTS, run_bench
from tests.fixtures.versions import version

pytestmark = [pytest.mark.e2e, pytest.mark.measure]
SHORT = ["--tests", "plain", "--repeat", "6", "--duration", "1", "--warmup", "0.5",
         "--connections", "8", *PORTS]


def test_ab_flags_the_slowed_server_calls_the_one_that_stopped_starting_broken_and_measures_only_what_changed(tmp_path):
    a = version(tmp_path / "a", {"steady": "300", "slowed": "300", "stops": "100"})
    b = version(tmp_path / "b", {"steady": "300", "slowed": "900", "stops": "100"},
                start_fails="stops")
    out = run_bench("ab", str(a), str(b), *SHORT, "--results-dir", str(tmp_path / "r"),
                    "--format", "json", "--output", str(tmp_path / "ab.json"))
    assert out.returncode == 3, out.stdout[-3000:] + out.stderr[-3000:]   # broken wins over 1
    verdicts = json.loads((tmp_path / "ab.json").read_text())
    assert verdicts["servers"] == ["slowed", "stops"]   # steady's folder is the same in both
    rows = {r["server"]: r for r in verdicts["cases"]}
    assert rows["slowed"]["verdict"] == "slower" and rows["slowed"]["moved"][0] == "req/s"
    rps = rows["slowed"]["figures"][0]
    assert rps["change"] < -0.2 and rps["blocks"] == 3
    assert rows["stops"]["verdict"] == "broken" and "on the candidate" in rows["stops"]["reason"]
    run_dir = next((tmp_path / "r" / "ab").glob("*/*/results.json")).parent
    stored = json.loads((run_dir / "results.json").read_text())
    assert stored["ab"]["pairs"][0] == ["slowed@A/none/raw/plain@c8", "slowed@B/none/raw/plain@c8"]
    md = (run_dir / "ab.md").read_text()
    assert md.startswith("<!-- webbench-ab -->") and "**BROKEN**" in md and "**SLOWER**" in md
    # the stored order is the paired schedule: each pair in blocks of ABBA or BAAB
    for pair in stored["ab"]["pairs"]:
        arms = "".join(e.split("/")[0][-1] for e in stored["schedule"]["order"]
                       if e.rsplit("#", 1)[0] in pair)
        assert {arms[i:i + 4] for i in range(0, len(arms), 4)} <= {"ABBA", "BAAB"}


def test_ab_with_nothing_changed_measures_nothing_and_says_so(tmp_path):
    a = version(tmp_path / "a", {"steady": "100"})
    b = version(tmp_path / "b", {"steady": "100"})
    out = run_bench("ab", str(a), str(b), *SHORT, "--results-dir", str(tmp_path / "r"))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Nothing to measure" in out.stdout and not (tmp_path / "r").exists()
