"""Verification against real databases and a deliberately broken server.

A verifier that passes everything is worse than none, so each defect the verifier
claims to catch is planted in tests/fixtures/broken_server and must be caught, and
the correct server must pass every check.

Databases: the session's throwaway servers (tests/conftest.py). Statement counters
are server-wide on MariaDB; verification re-measures a too-high count up to 3 times.
"""
from __future__ import annotations

import itertools
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from bench.infra import db
from bench.verify import contract as verify, querycount, statements
from bench.verify.checks import Client
from bench.core.dataset import all_users
from bench.infra.db import Endpoint
from tests.conftest import WORKER_OFFSET

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "fixtures" / "broken_server" / "server.py"
TOKEN = "hardcoded_token"
BURST = 20                                   # small: the machine is shared
PORTS = itertools.count(20500 + WORKER_OFFSET * 10)    # 100 ports per xdist worker


@pytest.fixture(scope="session")
def endpoints(databases):
    """The session's throwaway PostgreSQL and MariaDB (tests/conftest.py): private to this
    test run, so the server-wide statement counters see no one else's load."""
    return databases


@contextmanager
def broken_server(mode: str, engine: str, ep: Endpoint | None):
    """Start the fixture server like the harness would (BENCH_* environment)."""
    port = next(PORTS)
    env = dict(os.environ, BENCH_SERVER_ID=f"broken_{mode or 'correct'}", BENCH_HOST="127.0.0.1",
               BENCH_PORT=str(port), BENCH_WORKERS="2", BENCH_TOKEN=TOKEN, BENCH_DB=engine,
               BENCH_ORM="0", BENCH_DB_POOL_SIZE="2", BENCH_DB_POOL_TOTAL="2", BROKEN_MODE=mode,
               **(ep.server_env() if ep else {}))
    proc = subprocess.Popen([sys.executable, str(SERVER)], env=env, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                requests.get(base + "/ping/", timeout=1)
                break
            except requests.RequestException:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"broken server ({mode}) did not start on {port}")
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_verify(mode: str, engine: str, endpoints) -> verify.Report:
    ep = endpoints.get(engine)
    if ep is not None:       # as the harness does before it verifies: the contract's rows
        db.restore(ep)
    with broken_server(mode, engine, ep) as base:
        report = verify.verify_server(base, server_id=f"broken_{mode or 'correct'}", database=engine,
                                      orm=False, token=TOKEN, endpoint=ep, burst=BURST)
    print(report.summary_text())
    return report


def failed(report: verify.Report, prefix: str) -> list[verify.Check]:
    return [c for c in report.failures if c.name.startswith(prefix)]


def assert_restored(ep: Endpoint) -> None:
    assert db.fetch_users(ep) == all_users()


@pytest.mark.parametrize("engine", ["postgres", "mysql", "none"])
def test_correct_server_passes_every_check(engine, endpoints):
    report = run_verify("", engine, endpoints)
    assert report.passed, report.summary_text()
    assert report.reason == ""
    assert all(c.passed for c in report.checks), report.summary_text()   # no warnings either
    if engine == "none":
        assert report.queries == {}
        assert any(c.name == "user endpoints without database" for c in report.checks)
    else:
        per = report.queries["get user"]["per_request"]
        assert per["select"] == pytest.approx(1, abs=0.05) and per["update"] == 0
        per = report.queries["update user"]["per_request"]
        assert per["update"] == pytest.approx(1, abs=0.05)
        # RETURNING on PostgreSQL, UPDATE + SELECT on MySQL (team decision)
        assert per["select"] == pytest.approx(0 if engine == "postgres" else 1, abs=0.05)
        assert_restored(endpoints[engine])
    d = report.to_dict()
    assert d["passed"] is True and len(d["checks"]) == len(report.checks)


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_wrong_user_fails_user_fields(engine, endpoints):
    report = run_verify("wrong_user", engine, endpoints)
    assert not report.passed
    bad = failed(report, "get user")
    assert bad, report.summary_text()
    # the message names the field and both values
    assert any("username 'user43_" in c.detail and "expected 'user42_a1d0c'" in c.detail for c in bad)
    assert report.reason.startswith("get user 1: GET /user/1/: user_id 2 != expected 1")
    assert "\n" not in report.reason and len(report.reason) < 220
    assert not failed(report, "token") and not failed(report, "queries")


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_no_token_fails_token_checks(engine, endpoints):
    report = run_verify("no_token", engine, endpoints)
    assert not report.passed
    names = {c.name for c in report.failures}
    assert names == {"token missing", "token wrong"}, report.summary_text()
    detail = next(c.detail for c in report.failures if c.name == "token missing")
    assert "GET /user/1/ with no token: status 200, expected 401" in detail
    # the PATCH it accepted without a token was undone
    assert_restored(endpoints[engine])


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_double_query_fails_query_count(engine, endpoints):
    report = run_verify("double_query", engine, endpoints)
    assert not report.passed
    assert [c.name for c in report.failures] == ["queries per get user"], report.summary_text()
    assert "does 2.0 SELECT per get user, contract allows 1" in report.failures[0].detail
    assert report.queries["get user"]["per_request"]["select"] == pytest.approx(2, abs=0.05)


def test_error_under_load_passes_verification(endpoints):
    """Verification sends one request at a time and the server only fails while two or
    more requests are in flight, so verification passes it: that defect is the load
    phase's to catch (wrk's non-2xx / socket error accounting marks the row). The
    second half shows the defect is real: under concurrency, 500s appear."""
    ep = endpoints["postgres"]
    db.restore(ep)      # the contract's rows: a test before it on this worker may have written
    with broken_server("error_under_load", "postgres", ep) as base:
        report = verify.verify_server(base, server_id="broken_error_under_load", database="postgres",
                                      orm=False, token=TOKEN, endpoint=ep, burst=BURST)
        assert report.passed, report.summary_text()

        def hit(i: int) -> int:
            with requests.Session() as s:
                return [s.get(f"{base}/plain/?param1={i}", headers={"token": TOKEN}, timeout=5).status_code
                        for _ in range(25)]

        with ThreadPoolExecutor(4) as pool:
            statuses = [code for codes in pool.map(hit, range(4)) for code in codes]
    assert 500 in statuses and statuses.count(200) > len(statuses) // 2


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_update_check_leaves_table_restored(engine, endpoints):
    ep = endpoints[engine]
    with broken_server("", engine, ep) as base:
        client = verify.Client(base, TOKEN, 5.0)
        try:
            checks = verify.check_update(client, ep, verify.random.Random(7))
        finally:
            client.close()
    assert [c.name for c in checks] == ["update user answer", "update user stored"]
    assert all(c.passed for c in checks), checks
    assert_restored(ep)


def test_unreachable_server_fails_fast(endpoints):
    """Nothing listening: every check fails with a clear message, no long timeouts."""
    start = time.monotonic()
    report = verify.verify_server(f"http://127.0.0.1:{next(PORTS)}", server_id="ghost", database="none",
                                  orm=False, token=TOKEN, endpoint=None, timeout=2)
    assert not report.passed and report.reason.startswith("ping: GET /ping/: no answer")
    assert time.monotonic() - start < 10


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_postgres_fallback_counter_without_pg_stat_statements(endpoints, monkeypatch):
    """Without pg_stat_statements the xact/table counters still catch a double SELECT
    (slow: waits for PostgreSQL to flush backend statistics)."""
    ep = endpoints["postgres"]
    original = querycount.open_counter
    monkeypatch.setattr(querycount, "open_counter", lambda e: original(e, use_statements=False))
    monkeypatch.setattr(statements, "MEASURE_ATTEMPTS", 1)
    with broken_server("double_query", "postgres", ep) as base:
        client = verify.Client(base, TOKEN, 5.0)
        report = verify.Report("broken_double_query", "postgres", False)
        try:
            checks = verify.check_query_counts(client, ep, False, BURST, verify.random.Random(1), report)
        finally:
            client.close()
    by_name = {c.name: c for c in checks}
    assert report.queries["method"] == "pg_stat_database"
    assert "does 2.0 SELECT per get user" in by_name["queries per get user"].detail
    assert by_name["queries per update user"].passed, by_name["queries per update user"].detail
    assert "APPROXIMATE" in report.queries["get user"]["note"]
    assert_restored(ep)


def test_classify_statements():
    c = querycount.classify
    assert c('SELECT "users"."user_id" FROM "users" WHERE "users"."user_id" = $1') == "select"
    assert c("/* orm */ UPDATE users SET username = $1 WHERE user_id = $3 RETURNING user_id") == "update"
    assert c("BEGIN") == c("COMMIT") == c("SAVEPOINT sa_1") == c("SET search_path = x") == "transaction"
    assert c("SELECT pg_advisory_unlock_all()") == "other"
    assert c("INSERT INTO users_seed SELECT 1") == "other"
    assert c("SELECT calls FROM pg_stat_statements WHERE query ~ $1") is None


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_select_one_before_every_query_fails_on_both_databases(engine, endpoints):
    """A pool's pre-ping is work the contract does not allow: MySQL counts it as a
    SELECT, PostgreSQL as a statement that does not name the users table."""
    report = run_verify("select_one", engine, endpoints)
    assert {c.name for c in report.failures} == {"queries per get user", "queries per update user"}, \
        report.summary_text()
    detail = failed(report, "queries per get user")[0].detail
    if engine == "postgres":
        assert "does 1.0 other statements per get user" in detail, detail
        assert report.queries["get user"]["per_request"]["other"] == pytest.approx(1, abs=0.05)
    else:
        assert "does 2.0 SELECT per get user, contract allows 1" in detail, detail


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_a_raw_variant_sending_begin_commit_fails(engine, endpoints):
    report = run_verify("begin_commit", engine, endpoints)
    assert {c.name for c in report.failures} == {"queries per get user", "queries per update user"}, \
        report.summary_text()
    detail = failed(report, "queries per get user")[0].detail
    assert "raw driver does 2.0 transaction statements per get user" in detail, detail
    assert report.queries["get user"]["per_request"]["transaction"] == pytest.approx(2, abs=0.05)


def started_fixture(server_id: str, engine: str, endpoints, tmp_path, **settings):
    """The fixture server started and verified the way `run` does it (running_server)."""
    from bench.core.manifest import discover
    from bench.core.plan import Variant
    from bench.core.settings import Settings
    from bench.verify import verified_server
    spec = discover([ROOT / "tests" / "fixtures" / "servers"])[server_id]
    s = Settings(port=next(PORTS), **settings)
    return verified_server(Variant(spec, engine, False), s, endpoints.get(engine),
                           tmp_path / "server.log", token=TOKEN, suite=True)


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_worker_processes_and_db_connections_are_counted(engine, endpoints, tmp_path):
    with started_fixture("correct_processes", engine, endpoints, tmp_path,
                         workers=3, db_connections=6) as running:
        report = running.verification
    print(report.summary_text())
    assert report.passed, report.summary_text()
    checks = {c.name: c for c in report.checks}
    assert checks["workers"].passed and checks["workers"].detail.startswith("3 worker processes")
    assert checks["DB connections"].detail == (
        "6 connections seen by the database (budget 6 = 3 processes x 2)")
    assert report.connections == {"budget": {"total": 6, "processes": 3, "per_process": 2},
                                  "seen": 6}


def test_a_server_with_fewer_workers_than_asked_fails_verification(endpoints, tmp_path):
    with started_fixture("broken_fewer_workers", "postgres", endpoints, tmp_path,
                         workers=3, db_connections=6) as running:
        report = running.verification
    assert not report.passed
    workers = next(c for c in report.failures if c.name == "workers")
    assert workers.detail.startswith("expected 3 workers (--workers 3), found 2 worker processes")
    # and the database sees the pools of the two it has: under budget, said so
    connections = next(c for c in report.checks if c.name == "DB connections")
    assert connections.severity == "warning" and "sees 4 connections" in connections.detail


@contextmanager
def server_leaving_bodies_unread(status: bytes = b"401 Unauthorized",
                                 body: bytes = b'{"error":"invalid token"}'):
    """A loopback server that answers every request `status` without reading its body and
    then closes the connection without saying so (hyper does when the body had not arrived
    yet; Python's http.server after a request that asked `Connection: close`): here at
    the worst moment for the client, when the next request on that connection arrives."""
    listener = socket.create_server(("127.0.0.1", 0))
    answer = (b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    def serve(conn: socket.socket) -> None:
        with conn:
            pending = b""
            while True:
                while b"\r\n\r\n" not in pending:
                    data = conn.recv(65536)
                    if not data:
                        return
                    pending += data
                head, _, pending = pending.partition(b"\r\n\r\n")
                conn.sendall(answer)
                lines = head.lower().split(b"\r\n")
                length = next((int(line.split(b":")[1]) for line in lines
                               if line.startswith(b"content-length:")), 0)
                if length or b"connection: close" in lines:
                    # the close comes when the client speaks again on this connection
                    while len(pending) <= length:
                        data = conn.recv(65536)
                        if not data:
                            return
                        pending += data
                    return

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def test_token_checks_survive_a_server_that_closes_after_an_unread_body():
    """A server may refuse a request before reading its body and then close the
    connection (hyper does; RFC 9112 §9.3.1 tells clients to expect such closes): the
    token checks, which send a PATCH body the server rightly ignores, must not charge the
    next request's lost connection to the server (CI flakes of warp and of the fixture
    server, 2026-11-25)."""
    with server_leaving_bodies_unread() as base:
        client = Client(base, TOKEN, timeout=5)
        checks = verify.check_tokens(client, "postgres")
        client.close()
    assert [c.name for c in checks] == ["token missing", "token wrong"]
    assert all(c.passed for c in checks), [c.detail for c in checks]


def test_the_no_database_check_survives_a_server_that_closes_after_an_unread_body():
    """The same close after a 404 for a PATCH to a user endpoint of a server without a
    database, whose body it need not read: the next check's request (plain) must not get
    the lost connection (CI: hyper's `plain: no answer, RemoteDisconnected`, 2026-11-28)."""
    with server_leaving_bodies_unread(b"404 Not Found", b'{"error":"not found"}') as base:
        client = Client(base, TOKEN, timeout=5)
        checks = verify.check_no_database(client)
        after, err = client.request("GET", "/plain/?param1=a")
        client.close()
    assert checks[0].name == "user endpoints without database" and checks[0].passed, \
        checks[0].detail
    assert after is not None and after.status_code == 404, err

