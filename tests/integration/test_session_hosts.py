"""`verify --hosts FILE` goes through the same session as `run`: the hosts file is read,
the preflight checks the machines, the databases start, the servers are verified, and
everything stops. The hosts file names no remote role, so every role runs here."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from bench.infra.host import LOCAL
from tests.conftest import WORKER_OFFSET

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "servers"
# ports of their own: the session's database fixture keeps 16432/14306 busy
PORT, PG_PORT = 19181 + WORKER_OFFSET, 16533 + WORKER_OFFSET
LOCAL_ONLY = """# every role on this machine: no [client], [server] or [database] table
"""


def verify(tmp_path: Path, hosts: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(REPO / "run_bench.py"), "verify", "--hosts", str(hosts),
         "--servers", "correct_processes", "--servers-dir", str(FIXTURES),
         "--databases", "postgres", "--tests", "get_user,plain", "--workers", "2",
         "--db-connections", "4", "--db-mode", "local", "--port", str(PORT),
         "--pg-port", str(PG_PORT), "--results-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300)


def test_verify_with_a_hosts_file_of_local_roles_verifies_and_stops_everything(tmp_path):
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(LOCAL_ONLY)
    out = verify(tmp_path, hosts)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "databases (local): starting postgres" in out.stdout
    [report] = tmp_path.glob("verify-*/verification.json")
    reports = json.loads(report.read_text())
    # (with the ceiling, nginx, which verify leaves in)
    assert {"correct_processes/none/raw", "correct_processes/postgres/raw"} <= set(reports)
    assert all(r["passed"] for r in reports.values())
    assert LOCAL.port_is_free(PORT) and LOCAL.port_is_free(PG_PORT)


def test_verify_runs_the_preflight_before_starting_anything(tmp_path):
    hosts = tmp_path / "hosts.toml"
    hosts.write_text(LOCAL_ONLY)
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)   # past TIME_WAIT
        busy.bind(("127.0.0.1", PORT))
        busy.listen()
        out = verify(tmp_path, hosts)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]
    assert f"port {PORT} (--port (the servers)) is busy" in out.stderr
    assert "databases" not in out.stdout and not list(tmp_path.glob("verify-*"))
    assert LOCAL.port_is_free(PG_PORT)
