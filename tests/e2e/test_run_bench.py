"""run_bench.py end to end: real databases, real servers, real wrk, short durations."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from bench.storage import results
from bench.infra.host import LOCAL
port_is_free = LOCAL.port_is_free

from tests.conftest import E2E_MYSQL_PORT, E2E_PG_PORT, E2E_PORT
pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "servers"
# ports of their own (the session's database fixture keeps its own busy), per xdist worker
PORTS = ["--port", str(E2E_PORT), "--pg-port", str(E2E_PG_PORT), "--mysql-port",
         str(E2E_MYSQL_PORT), "--db-mode", "local"]


NOT_RUN = ("list", "serve", "verify", "build", "compare", "report", "history")


def run_bench(*args: str, env: dict | None = None, timeout: float = 900):
    """run_bench.py as a user runs it. A measuring command gets one wrk thread unless the
    test sets one: the default depends on the CPU count, and the tests must behave the
    same on 2 cores or 64."""
    if args and args[0] not in NOT_RUN and "--threads" not in args:
        args = (*args, "--threads", "1")
    return subprocess.run([sys.executable, str(REPO / "run_bench.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def load_running(port: str = str(E2E_PORT), timeout: float = 120,
                 alive=lambda: True) -> list[psutil.Process]:
    """Waits until a load generator (wrk or oha) sending to `port` holds a connection
    there: the window under load has begun (with --warmup 0 the only load is the
    measured window's). Its processes; [] when none did within `timeout` or once
    `alive()` is false."""
    def sends_there(proc) -> bool:
        cmd = proc.info["cmdline"] or []
        if not (proc.info["name"] in ("wrk", "oha") or (cmd and cmd[0].endswith(("/wrk", "/oha")))):
            return False
        if not any(arg.startswith("http") and (arg.endswith(f":{port}") or f":{port}/" in arg)
                   for arg in cmd):
            return False
        try:
            return any(c.raddr and c.raddr.port == int(port) and c.status == psutil.CONN_ESTABLISHED
                       for c in proc.net_connections(kind="tcp"))
        except psutil.Error:
            return False

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive():
        found = [p for p in psutil.process_iter(["name", "cmdline"]) if sends_there(p)]
        if found:
            return found
        time.sleep(0.05)
    return []


def only_run(results_dir: Path) -> dict:
    return results.load(results.latest_run(results_dir))


# W for the tests that measure gin and fastapi: 4, not the default 8, because fastapi
# starts W Python processes for every sample (3 s a start at 8 on 2 cores, most of that
# CPU-bound imports), and W changes nothing these tests check
WORKERS = 4


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
@pytest.mark.measure       # every pool connected (64 seen by the database) wants a quiet machine
def test_full_run_of_a_go_and_a_python_server(tmp_path):
    """gin (one process, W threads of a work-stealing runtime) and fastapi (W processes)
    raw on both databases,
    two interleaved samples per case, with the nginx ceiling for plain and to json (on by
    default): every sample ok, spread and resources stored, four tables with the spread
    and the ceiling fraction. Raw only: the ORM variants go through the same sequence
    (and each is verified against the contract in tests/integration/test_contract.py),
    so they would only make this test longer (183 s with them, on 2 cores).

    It runs in the serial phase, after a warm-up: beside 3 other test workers on 2 cores,
    and alone without a warm-up, the database counted 8 and 33 of fastapi's 64 pool
    connections in a sample (workers that had not opened theirs yet). Whether every client connection is seen in a 1 s window: test_every_
    connection_of_the_window_is_seen_on_its_worker."""
    out = run_bench("--servers", "gin,fastapi", "--orm", "raw", "--repeat", "2",
                    "--duration", "1", "--warmup", "0.5", "--connections", "16",
                    "--workers", str(WORKERS), "--order-seed", "5",
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    doc = only_run(tmp_path)
    assert doc["status"] == "complete"
    assert len(doc["cases"]) == 6 + 6 + 2
    assert [c["id"] for c in doc["cases"] if c["server"] == "nginx"] == \
        ["nginx/none/raw/plain@c16", "nginx/none/raw/to_json@c16"]
    assert doc["schedule"]["order_seed"] == 5 and len(doc["schedule"]["order"]) == 2 * 14
    # interleaved: the first half of the schedule is round 1, each case once
    first_round = [o.rsplit("#", 1) for o in doc["schedule"]["order"][:14]]
    assert {i for _, i in first_round} == {"0"} and len({c for c, _ in first_round}) == 14
    assert {k: doc["load"][k] for k in ("generator", "connections", "connections_requested",
                                        "connection_modes", "behind")} == \
        {"generator": "wrk", "connections": 16, "connections_requested": 16,
         "connection_modes": ["keep-alive"], "behind": ["none"]}
    db_cpu_s = 0.0
    for case in doc["cases"]:
        assert case["status"] == "ok", (case["id"], case["reason"])
        assert len(case["samples"]) == 2 and case["stats"]["samples_ok"] == 2
        assert case["stats"]["requests_per_sec"]["ci_low"] is not None
        for sample in case["samples"]:
            assert sample["summary"]["requests"] > 0 and sample["summary"]["errors"]["total"] == 0
            assert sample["summary"]["sent"] >= sample["summary"]["requests"]
            assert sample["generator"]["connections"] == 16
            server = sample["resources"]["server"]
            assert server["cpu_s"] > 0 and server["memory_kind"] == "pss"
            assert server["memory_peak_mb"] > 0 and sample["resources"]["client"]["cpu_s"] > 0
            if case["database"] != "none":
                # every backend of the pool is sampled; its CPU time is read in clock
                # ticks (10 ms) per process, so a 1 s window of a slow server spread over
                # 64 backends may honestly read 0; the run's total below cannot
                database = sample["resources"]["database"]
                assert database["cpu_s"] >= 0 and database["processes"] >= 1
                db_cpu_s += database["cpu_s"]
            assert sample["overhead_s"]["total"] > 0
            process = sample["server_process"]
            if case["database"] != "none":
                processes = WORKERS if case["server"] == "fastapi" else 1
                assert process["db_budget"] == {"total": 64, "processes": processes,
                                                "per_process": 64 // processes}
                assert process["db_connections_seen"] == 64       # counted by the database
                assert sample["db_settle"]["quiet"] and sample["db_settle"]["seconds"] > 0
            spread = process["client_connections"]
            if case["server"] == "nginx":      # the reference: no pool, its spread not judged
                continue
            # stored for every sample, with what the client held; whether the reading saw
            # them all is judged in the serial phase (here a loaded machine's worker may
            # not have accepted yet: seen 0 of 16 once with 4 test workers on 2 cores)
            assert spread["expected"] == 16 and 0 <= spread["total"] <= 17, spread
            if case["server"] == "fastapi":
                assert len(spread["per_worker"]) == WORKERS
                assert sum(spread["per_worker"]) == spread["total"]
    assert db_cpu_s > 0.1
    assert all(r["passed"] for r in doc["verification"].values())
    for key, report in doc["verification"].items():
        workers = next(c for c in report["checks"] if c["name"] == "workers")
        if key.startswith("gin"):      # Go's threads are not countable (its manifest)
            assert workers["severity"] == "warning" and "not counted" in workers["detail"]
        else:
            assert workers["passed"] and \
                workers["detail"].startswith(f"{WORKERS} worker processes"), workers
        if not key.endswith("none/raw"):
            assert report["connections"]["seen"] == 64
    assert "fastapi" in doc["servers"]["fastapi"]["versions"]
    assert any("gin-gonic/gin" in name for name in doc["servers"]["gin"]["versions"])
    assert doc["environment"]["cpus_usable"] >= 1 and doc["environment"]["git"]["commit"]
    # what runs, as each build recorded it: gin's binary to the byte; fastapi's own
    # virtualenv (its packages), its folder and the shared _pycommon, all present
    [(binary, gin_mb)] = doc["builds"]["gin"]["artefacts"].items()
    assert binary.endswith("/gin/server") and gin_mb == round(os.path.getsize(binary) / 2**20, 2)
    fastapi = doc["builds"]["fastapi"]
    assert len(fastapi["artefacts"]) == 3 and fastapi["size_mb"] > 20     # pydantic alone is more
    update = next(c for c in doc["cases"] if c["id"] == "fastapi/mysql/raw/update_user@c16")
    checks = update["samples"][0]["checks"]
    assert checks["rows_after"] == 10_000 and checks["rows_updated"] > 0

    tables = subprocess.run([sys.executable, "create_markdown_tables.py",
                             str(results.latest_run(tmp_path))],
                            cwd=REPO, capture_output=True, text=True)
    assert tables.returncode == 0, tables.stderr
    for test in ("get user", "update user", "plain", "to json"):
        assert f"## {test}" in tables.stdout
    assert "| test_name" in tables.stdout and " ± " in tables.stdout
    assert "nginx (reference)" in tables.stdout and "of ceiling" in tables.stdout
    assert "Measured on " in tables.stdout and "2 sample(s) of 1 s per case" in tables.stdout
    assert (results.latest_run(tmp_path) / "tables.md").exists()


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
@pytest.mark.measure       # 1 s windows: seeing all 16 wants the machine to itself
def test_every_connection_of_the_window_is_seen_on_its_worker(tmp_path):
    """The spread of wrk's 16 keep-alive connections over fastapi's 4 worker processes
    and gin's one: all 16 are seen within the window (a server may still hold one more,
    not yet closed), each on the process that accepted it. After a warm-up: with none,
    fastapi's workers had accepted 9 of the 16 by the end of a 1 s window on an idle
    2-core machine (the rest waited in the listen queue), which the stored `expected`
    shows and no spread is judged from."""
    out = run_bench("--servers", "gin,fastapi", "--tests", "plain", "--no-ceiling",
                    "--repeat", "1", "--duration", "1", "--warmup", "0.5", "--connections",
                    "16", "--workers", str(WORKERS), "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    cases = {c["server"]: c for c in only_run(tmp_path)["cases"]}
    assert set(cases) == {"gin", "fastapi"}
    for server, case in cases.items():
        spread = case["samples"][0]["server_process"]["client_connections"]
        assert spread["expected"] == 16 and 16 <= spread["total"] <= 17, (server, spread)
        if server == "fastapi":
            assert len(spread["per_worker"]) == WORKERS
            assert sum(spread["per_worker"]) == spread["total"]
        else:
            assert spread["per_worker"] is None       # one process: nothing to spread over


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_requests_that_get_no_answer_are_errors_per_request_sent(tmp_path):
    out = run_bench("--servers", "broken_drops_connections", "--servers-dir", str(FIXTURES),
                    "--tests", "plain", "--no-ceiling", "--repeat", "1", "--duration", "2", "--warmup", "0",
                    "--connections", "8", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 1, out.stdout[-3000:]
    sample = only_run(tmp_path)["cases"][0]["samples"][0]
    s = sample["summary"]
    assert s["sent"] - s["requests"] == s["unanswered"] > 8      # more than in flight at the stop
    assert s["errors"]["lost"] == s["unanswered"] - 8 > 0
    assert s["errors"]["total"] >= s["errors"]["lost"]
    assert sample["error_rate"] == pytest.approx(s["errors"]["total"] / s["sent"])
    assert sample["status"] == "invalid" and "of requests failed" in sample["reason"]


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_the_connection_count_that_really_ran_is_stored(tmp_path):
    out = run_bench("--servers", "gin", "--tests", "plain", "--connections", "10",
                    "--threads", "3", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 2
    assert "--connections 10 does not divide over --threads 3: wrk would open only 9" in out.stderr
    out = run_bench("--servers", "gin", "--tests", "plain", "--no-ceiling", "--repeat", "1",
                    "--duration", "1", "--warmup", "0", "--connections", "10", "--threads", "2",
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-3000:]
    doc = only_run(tmp_path)
    sample = doc["cases"][0]["samples"][0]
    assert sample["generator"]["connections"] == 10 and sample["generator"]["threads"] == 2
    assert sample["generator"]["command"][1:5] == ["-t", "2", "-c", "10"]
    assert doc["load"]["connections"] == 10


def test_unknown_names_exit_2_and_list_valid_ones(tmp_path):
    out = run_bench("--servers", "nope", "--results-dir", str(tmp_path))
    assert out.returncode == 2
    assert "unknown server 'nope'; valid:" in out.stderr and "gin" in out.stderr
    out = run_bench("--tests", "delete_user", "--results-dir", str(tmp_path))
    assert out.returncode == 2 and "valid: get user, update user, plain, to json" in out.stderr


def test_a_db_budget_that_does_not_split_is_refused_before_anything_starts(tmp_path):
    out = run_bench("--servers", "fastapi", "--db-connections", "30", "--results-dir",
                    str(tmp_path), *PORTS)
    assert out.returncode == 2, out.stderr
    assert ("--db-connections 30 does not split evenly over fastapi's 8 worker processes "
            "(3 each would open only 24): use a multiple of 8, such as 24 or 32") in out.stderr
    assert not list(tmp_path.iterdir())             # refused before any run folder


def test_missing_wrk_says_how_to_install_it(tmp_path):
    # a Python server: it runs on the harness's own interpreter, which needs no PATH
    out = run_bench("--servers", "fastapi", "--results-dir", str(tmp_path),
                    env={"PATH": str(tmp_path)})
    assert out.returncode != 0
    assert "wrk" in out.stderr and "apt-get install wrk" in out.stderr


def test_a_server_whose_toolchain_is_missing_is_refused_by_name_and_listed_as_unavailable(
        tmp_path):
    """PATH without Go: gin cannot be built, so naming it exits 2 with the reason before
    anything starts, and `list` says why it is unavailable."""
    no_go = os.pathsep.join(d for d in os.environ["PATH"].split(os.pathsep)
                            if not (Path(d) / "go").exists())
    out = run_bench("--servers", "gin", "--results-dir", str(tmp_path), env={"PATH": no_go})
    assert out.returncode == 2, out.stdout[-2000:] + out.stderr[-2000:]
    assert "gin is unavailable on this machine: go is not installed" in out.stderr
    assert "gin needs go >= 1.26" in out.stderr and not list(tmp_path.iterdir())
    listing = run_bench("list", env={"PATH": no_go})
    assert re.search(r"^gin .* no: go is not installed", listing.stdout, re.M), listing.stdout


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_server_that_never_becomes_ready_is_recorded_and_the_run_goes_on(tmp_path):
    out = run_bench("--servers", "never_ready,gin", "--servers-dir", str(FIXTURES),
                    "--tests", "plain", "--no-ceiling", "--repeat", "1", "--duration", "1", "--warmup", "0",
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 1
    assert "fixture: cannot bind, giving up" in out.stdout       # the log's tail
    doc = only_run(tmp_path)
    by_server = {c["server"]: c for c in doc["cases"]}
    assert by_server["never_ready"]["status"] == "failed"
    assert "exited with code 3" in by_server["never_ready"]["reason"]
    assert by_server["gin"]["status"] == "ok"


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_ctrl_c_stops_everything_and_keeps_results(tmp_path):
    proc = subprocess.Popen([sys.executable, "run_bench.py", "--servers", "gin",
                             "--tests", "plain,to_json", "--repeat", "1", "--duration", "4",
                             "--warmup", "0", "--order-seed", "1", "--no-ceiling", "--threads", "1",
                             "--results-dir", str(tmp_path), *PORTS],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = list(tmp_path.glob("*/*/results.json"))
        if runs:
            doc = json.loads(runs[0].read_text())
            if any(c["status"] == "ok" for c in doc["cases"]):
                break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the first case never finished")
    # the second case is under load now
    assert load_running(alive=lambda: proc.poll() is None), "the second case never ran wrk"
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output[-3000:]
    doc = only_run(tmp_path)
    assert doc["status"] == "interrupted"
    assert sorted(c["status"] for c in doc["cases"]) == ["interrupted", "ok"]
    assert port_is_free(E2E_PORT)


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_broken_servers_are_caught_and_shown_not_dropped(tmp_path):
    """Wrong answers stop a server before load; 500s under load make its run invalid; a
    server that dies mid-run fails its case, and the run goes on."""
    out = run_bench("--servers", "broken_wrong_user,broken_error_under_load,broken_dies_under_load",
                    "--servers-dir", str(FIXTURES), "--databases", "postgres",
                    "--tests", "get_user", "--repeat", "1", "--duration", "2", "--warmup", "0",
                    "--connections", "8", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 1, out.stdout[-3000:]
    doc = only_run(tmp_path)
    by_server = {c["server"]: c for c in doc["cases"]}
    wrong = by_server["broken_wrong_user"]
    assert wrong["status"] == "verification failed" and wrong["samples"][0]["summary"] is None
    assert "username" in wrong["reason"]
    erratic = by_server["broken_error_under_load"]
    assert erratic["status"] == "invalid"
    assert erratic["samples"][0]["summary"]["errors"]["status"] > 0
    assert "of requests failed (threshold 0.10%)" in erratic["reason"]
    died = by_server["broken_dies_under_load"]
    assert died["status"] == "failed" and "server exited during the run (code 7)" in died["reason"]
    tables = (results.latest_run(tmp_path) / "tables.md").read_text()
    assert "verification failed: " in tables and "invalid: " in tables
    verification = (results.latest_run(tmp_path) / "verification.txt").read_text()
    assert "broken_wrong_user" in verification


def test_serve_starts_one_server_for_debugging_and_ctrl_c_stops_it():
    import requests
    proc = subprocess.Popen([sys.executable, "run_bench.py", "serve", "gin", "--db", "mysql",
                             *PORTS], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Ctrl-C stops"):
                break
        text = "".join(lines)
        assert f"is ready at http://127.0.0.1:{E2E_PORT}" in text, text
        assert f"curl -s -H 'token: hardcoded_token' http://127.0.0.1:{E2E_PORT}/user/42/" in text
        r = requests.get(f"http://127.0.0.1:{E2E_PORT}/user/42/", headers={"token": "hardcoded_token"})
        assert r.status_code == 200 and r.json()["username"] == "user42_a1d0c"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert port_is_free(E2E_PORT) and port_is_free(E2E_MYSQL_PORT)


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
@pytest.mark.measure
def test_compare_flags_a_server_slowed_by_a_known_cost(tmp_path):
    """Baseline and candidate of a fixture whose per-request CPU cost the test sets: the
    candidate, four times as costly, is flagged slower (exit 1); the other way round it
    is faster, which fails nothing (exit 0). (Two identical runs comparing as unchanged is
    checked on numbers in tests/unit/test_compare.py, and with real runs by `ab`'s A/A.)"""
    common = ["--servers", "tunable_cost", "--servers-dir", str(FIXTURES), "--tests", "plain", "--no-ceiling",
              "--repeat", "4", "--duration", "1", "--warmup", "0.5", "--connections", "8",
              *PORTS]
    runs = []
    for cost in ("400", "1600"):
        rd = tmp_path / f"cost{cost}-{len(runs)}"
        out = run_bench(*common, "--results-dir", str(rd), env={"FIXTURE_COST_US": cost})
        assert out.returncode == 0, out.stdout[-3000:]
        runs.append(results.latest_run(rd))
    slower = run_bench("compare", str(runs[0]), str(runs[1]), "--results-dir", str(tmp_path))
    assert slower.returncode == 1, slower.stdout
    line = next(x for x in slower.stdout.splitlines() if "tunable_cost" in x)
    assert "**SLOWER**" in line and "(weak)" not in line
    faster = run_bench("compare", str(runs[1]), str(runs[0]), "--results-dir", str(tmp_path))
    assert faster.returncode == 0, faster.stdout
    assert "0 slower, 1 faster, 0 unchanged" in faster.stdout
