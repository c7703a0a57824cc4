"""The "cost to run" figures against a server of known footprint: known_footprint is the
tunable_cost fixture (the same code) that sleeps 2 s before it listens, answers its
endpoints (not /ping/) 0.5 s later, holds 200 MiB from its start and 1 MiB more per open
connection. Measured beside tunable_cost in one
run, the differences are those numbers: the interpreter's own start-up and memory, the
same in both, cancel."""
from __future__ import annotations

import re
import statistics
import subprocess
import sys

import pytest

from bench.paths import REPO
from bench.storage import results
from tests.e2e.test_run_bench import FIXTURES, PORTS, only_run, run_bench

# start-up is wall time: judged alone, in the serial phase
# full: make test-all; the everyday tier's tests run its lines of bench/ (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.measure, pytest.mark.full]
CONNECTIONS = 32
SAMPLES = 2


def figures(case: dict) -> dict:
    ok = [s for s in case["samples"] if s["status"] == results.OK]
    assert len(ok) == SAMPLES, case["reason"]
    median = lambda values: statistics.median(values)  # noqa: E731
    return {
        "start": median([s["overhead_s"]["start_to_ping"] for s in ok]),
        # from /ping/ to the case's own endpoint's first 200
        "warm": median([s["overhead_s"]["start_to_first_answer"]
                        - s["overhead_s"]["start_to_ping"] for s in ok]),
        "idle": median([s["server_process"]["memory_idle_mb"] for s in ok]),
        # under load, above its own idle memory: what the open connections hold
        "load": median([s["resources"]["server"]["memory_mean_mb"]
                        - s["server_process"]["memory_idle_mb"] for s in ok]),
        # of which the processes' own (anonymous) memory: where a memset's pages go
        "idle_anon": median([s["server_process"]["memory_idle_split_mb"]["anon"] for s in ok]),
        "load_anon": median([s["resources"]["server"]["memory_split_mb"]["anon"]
                             - s["server_process"]["memory_idle_split_mb"]["anon"] for s in ok]),
        "kinds": {s["server_process"]["memory_idle_kind"] for s in ok}
                 | {s["resources"]["server"]["memory_kind"] for s in ok},
    }


def test_a_known_footprint_shows_in_the_start_up_and_memory_figures(tmp_path):
    out = run_bench("--servers", "tunable_cost,known_footprint", "--servers-dir",
                    str(FIXTURES), "--tests", "plain", "--no-ceiling", "--repeat", str(SAMPLES),
                    "--duration", "1.5", "--warmup", "0.5", "--connections", str(CONNECTIONS),
                    "--threads", "1", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    cases = {c["server"]: c for c in only_run(tmp_path)["cases"]}
    known, base = figures(cases["known_footprint"]), figures(cases["tunable_cost"])
    assert known["kinds"] == base["kinds"] == {"pss"}
    # the 2 s sleep and the 200 MiB memset before it (2.22 s more, measured on 2 cores),
    # give or take the interpreter's start varying between the two
    assert 1.9 <= known["start"] - base["start"] <= 2.6, (known, base)
    assert 2.0 <= known["start"] <= 3.5, known
    # its endpoints answer 0.5 s after it listens, /ping/ at once: the first answer comes
    # that much later; the same server without the delay answers both together
    assert 0.4 <= known["warm"] <= 0.9 and base["warm"] <= 0.2, (known, base)
    # 200 MiB idle and 1 MiB per connection under load, each within 10 %
    assert 180 <= known["idle"] - base["idle"] <= 220, (known, base)
    assert 0.9 * CONNECTIONS <= known["load"] - base["load"] <= 1.1 * CONNECTIONS, (known, base)
    # ... and all of it anonymous memory, none mapped files or shared memory
    assert 180 <= known["idle_anon"] - base["idle_anon"] <= 220, (known, base)
    assert 0.9 * CONNECTIONS <= known["load_anon"] - base["load_anon"] <= 1.1 * CONNECTIONS, \
        (known, base)
    # the kernel's socket buffers, which PSS leaves out, read beside it: every reading
    # finds at least the server's listening socket
    for case in cases.values():
        for s in case["samples"]:
            sockets = s["resources"]["server"]["socket_memory_mb"]
            assert sockets["sockets"] >= 1 and sockets["peak"] >= sockets["mean"] >= 0, s

    tables = subprocess.run([sys.executable, "create_markdown_tables.py", "--columns", "cost",
                             str(results.latest_run(tmp_path))],
                            cwd=REPO, capture_output=True, text=True)
    assert tables.returncode == 0, tables.stderr
    section = tables.stdout.split("## cost to run", 1)[1]
    # cells by their column's name: a column added later moves the others
    table = [[c.strip() for c in line.strip().strip("|").split("|")]
             for line in section.splitlines() if line.startswith("|")]
    row = next(dict(zip(table[0], cells)) for cells in table[2:] if "known_footprint" in cells)
    figure = lambda header: int(row[header].split()[0].replace(",", ""))  # noqa: E731
    assert 2000 <= figure("start-up to /ping/ ms") <= 3500, row
    assert 2400 <= figure("to its test's first answer ms") <= 4000, row
    assert row["memory"] == "pss", row
    # a fixture: nothing it runs is declared, and it has no build of its own
    assert row["what runs MiB"] == "-" and row["build s (cold / the run's)"] == "-", row
    assert re.fullmatch(r"[\d,]+\.\d\d / [\d,]+\.\d\d",
                        row["socket buffers MiB (mean / peak)"]), row
    page = (results.latest_run(tmp_path) / "report.html").read_text()
    assert 'id="cost_to_run"' in page and "known_footprint" in page
