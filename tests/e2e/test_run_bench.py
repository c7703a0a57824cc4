"""run_bench.py end to end: real databases, real servers, real wrk, short durations."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import results
from bench.provision import port_is_free

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "servers"
# ports of their own: the session's database fixture keeps 16432/14306 busy
PORTS = ["--port", "19081", "--pg-port", "16433", "--mysql-port", "14307"]


def run_bench(*args: str, env: dict | None = None, timeout: float = 900):
    return subprocess.run([sys.executable, str(REPO / "run_bench.py"), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def only_run(results_dir: Path) -> dict:
    return results.load(results.latest_run(results_dir))


def test_full_run_of_a_rust_and_a_python_server(tmp_path):
    """actix-web raw and fastapi raw + ORM on both databases: every case ok, four tables."""
    out = run_bench("--servers", "actix-web,fastapi", "--duration", "1", "--warmup", "1",
                    "--connections", "16", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    doc = only_run(tmp_path)
    assert doc["status"] == "complete"
    assert len(doc["cases"]) == 6 + 10
    for case in doc["cases"]:
        assert case["status"] == "ok", (case["id"], case["reason"])
        assert case["summary"]["requests"] > 0
        assert case["summary"]["errors"]["total"] == 0
        assert case["wrk"]["command"][0].endswith("wrk")
        assert case["overhead_s"]["total"] > 0
    assert all(r["passed"] for r in doc["verification"].values())
    update = next(c for c in doc["cases"] if c["id"] == "fastapi/mysql/orm/update_user")
    assert update["checks"]["rows_after"] == 10_000 and update["checks"]["rows_updated"] > 0

    tables = subprocess.run([sys.executable, "create_markdown_tables.py",
                             str(results.latest_run(tmp_path))],
                            cwd=REPO, capture_output=True, text=True)
    assert tables.returncode == 0, tables.stderr
    for test in ("get user", "update user", "plain", "to json"):
        assert f"## {test}" in tables.stdout
    assert "| test_name" in tables.stdout
    assert (results.latest_run(tmp_path) / "tables.md").exists()


def test_unknown_names_exit_2_and_list_valid_ones(tmp_path):
    out = run_bench("--servers", "nginx", "--results-dir", str(tmp_path))
    assert out.returncode == 2
    assert "unknown server 'nginx'; valid:" in out.stderr and "actix-web" in out.stderr
    out = run_bench("--tests", "delete_user", "--results-dir", str(tmp_path))
    assert out.returncode == 2 and "valid: get user, update user, plain, to json" in out.stderr


def test_missing_wrk_says_how_to_install_it(tmp_path):
    out = run_bench("--servers", "actix-web", "--results-dir", str(tmp_path),
                    env={"PATH": str(tmp_path)})
    assert out.returncode != 0
    assert "wrk" in out.stderr and "apt-get install wrk" in out.stderr


def test_server_that_never_becomes_ready_is_recorded_and_the_run_goes_on(tmp_path):
    out = run_bench("--servers", "never_ready,actix-web", "--servers-dir", str(FIXTURES),
                    "--tests", "plain", "--duration", "1", "--warmup", "0",
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 1
    assert "fixture: cannot bind, giving up" in out.stdout       # the log's tail
    doc = only_run(tmp_path)
    by_server = {c["server"]: c for c in doc["cases"]}
    assert by_server["never_ready"]["status"] == "failed"
    assert "exited with code 3" in by_server["never_ready"]["reason"]
    assert by_server["actix-web"]["status"] == "ok"


def test_ctrl_c_stops_everything_and_keeps_results(tmp_path):
    proc = subprocess.Popen([sys.executable, "run_bench.py", "--servers", "actix-web",
                             "--tests", "plain,to_json", "--duration", "4", "--warmup", "0",
                             "--results-dir", str(tmp_path), *PORTS],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        runs = list(tmp_path.glob("*/results.json"))
        if runs:
            doc = json.loads(runs[0].read_text())
            if doc["cases"][0]["status"] == "ok":
                break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the first case never finished")
    time.sleep(1.0)                               # the second case is under load now
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, output[-3000:]
    doc = only_run(tmp_path)
    assert doc["status"] == "interrupted"
    assert doc["cases"][0]["status"] == "ok"
    assert doc["cases"][1]["status"] == "interrupted"
    assert port_is_free(19081)


def test_broken_servers_are_caught_and_shown_not_dropped(tmp_path):
    """Wrong answers stop a server before load; 500s under load make its run invalid; a
    server that dies mid-run fails its case, and the run goes on."""
    out = run_bench("--servers", "broken_wrong_user,broken_error_under_load,broken_dies_under_load",
                    "--servers-dir", str(FIXTURES), "--databases", "postgres",
                    "--tests", "get_user", "--duration", "2", "--warmup", "0",
                    "--connections", "8", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 1, out.stdout[-3000:]
    doc = only_run(tmp_path)
    by_server = {c["server"]: c for c in doc["cases"]}
    wrong = by_server["broken_wrong_user"]
    assert wrong["status"] == "verification failed" and wrong["summary"] is None
    assert "username" in wrong["reason"]
    erratic = by_server["broken_error_under_load"]
    assert erratic["status"] == "invalid"
    assert erratic["summary"]["errors"]["status"] > 0
    assert "of requests failed (threshold 0.10%)" in erratic["reason"]
    died = by_server["broken_dies_under_load"]
    assert died["status"] == "failed" and "server exited during the run (code 7)" in died["reason"]
    tables = (results.latest_run(tmp_path) / "tables.md").read_text()
    assert "verification failed: " in tables and "invalid: " in tables
    verification = (results.latest_run(tmp_path) / "verification.txt").read_text()
    assert "broken_wrong_user" in verification


def test_serve_starts_one_server_for_debugging_and_ctrl_c_stops_it():
    import requests
    proc = subprocess.Popen([sys.executable, "run_bench.py", "serve", "actix-web", "--db", "mysql",
                             *PORTS], cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("Ctrl-C stops"):
                break
        text = "".join(lines)
        assert "is ready at http://127.0.0.1:19081" in text, text
        assert "curl -s -H 'token: hardcoded_token' http://127.0.0.1:19081/user/42/" in text
        r = requests.get("http://127.0.0.1:19081/user/42/", headers={"token": "hardcoded_token"})
        assert r.status_code == 200 and r.json()["username"] == "user42_a1d0c"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    assert proc.returncode == 0
    assert port_is_free(19081) and port_is_free(14307)
