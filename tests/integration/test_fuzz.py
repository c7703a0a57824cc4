"""Every server variant fuzzed against docs/openapi.yaml (the contract's HTTP API).

bench/verify checks the answers the contract names; this throws a few hundred other
requests at the same servers (schemathesis's boundary cases and generated data: odd
ids, bodies with wrong types or extra keys, arbitrary Unicode, missing or wrong tokens,
other methods; plus raw requests no schema describes, tests/integration/fuzz_edges.py)
and holds every answer to the documented status codes, content types and schemas,
never a 5xx, and to what the contract says that request gets. Then: the server still
runs with the workers it started with, and the table holds exactly the contract's rows
plus the writes the server reported (the PATCHes it accepted, the rows /updates/
answered as written): no row changed that the server did not report.

Each variant is started by bench.infra.lifecycle.running_server (the code every run
uses) against the session's freshly restored databases. Database variants are fuzzed
on the user endpoints and, when the manifest declares the database suite (`[suite]`),
on /queries/, /updates/, /fortunes/ and /cached/ (n's edge cases included); the plain /
to json / ping endpoints need no database and are fuzzed once per server, on its "none"
variant (which also answers the user and suite endpoints with 404). The requests are
made once and are the same in every run (tests/integration/fuzzing.py), so a failure
reproduces.
"""
from __future__ import annotations

import os
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bench.core import dataset, manifest
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra import db
from bench.infra.lifecycle import running_server
from bench.infra.server import log_tail
from bench.verify.workers import check_workers
from tests.conftest import TEST_SERVER_PORT, selected_servers
from tests.integration import fuzz_edges, fuzz_expectations, fuzzing
from tests.integration.fuzz_expectations import Update, table_problems

pytestmark = pytest.mark.integration


# Reference servers (manifest `reference = true`, e.g. nginx) answer only plain and to
# json from their configuration: they do not implement the whole contract.
SPECS = {i: s for i, s in selected_servers(manifest.discover()).items() if not s.reference}
VARIANTS = [Variant(spec, d, o) for spec in SPECS.values() for d, o in spec.variants()] + \
           [Variant(spec, "none", False) for spec in SPECS.values()]
# As in test_contract: two workers show a dying worker as well as eight, on a small machine.
SETTINGS = Settings(workers=2, db_connections=4, port=TEST_SERVER_PORT)

# Every operation's coverage cases (a few dozen, deterministic boundaries), then a few
# dozen generated requests per operation; PATCH gets the most, since its body is where
# the input space is. 42 is an existing user (negative bodies must never reach it).
# BENCH_FUZZ_SCALE=N generates N times as many (other, but again fixed, requests) for a
# deeper run than the suite's; the default keeps the module near a minute.
SCALE = float(os.environ.get("BENCH_FUZZ_SCALE", "1"))
USER = "/user/{id}/"


def step(path: str, method: str, mode: str, count: int = 0, user_id: int | None = None):
    """A fuzzing.Step with its count scaled by BENCH_FUZZ_SCALE."""
    return fuzzing.Step(path, method, mode, max(1, round(count * SCALE)) if count else 0, user_id)


USER_PLAN = [step("/ping/", "GET", "coverage"),
             step(USER, "GET", "coverage"), step(USER, "PATCH", "coverage"),
             step(USER, "GET", "positive", 30), step(USER, "GET", "negative", 30),
             step(USER, "PATCH", "positive", 60), step(USER, "PATCH", "negative", 30),
             step(USER, "PATCH", "negative", 40, user_id=42),
             step(USER, "GET", "edges"), step(USER, "PATCH", "edges")]
NO_DB_PLAN = [step("/ping/", "GET", "coverage"),
              step("/plain/", "GET", "coverage"), step("/to_json/", "GET", "coverage"),
              step("/plain/", "GET", "positive", 40), step("/plain/", "GET", "negative", 15),
              step("/to_json/", "GET", "positive", 40), step("/to_json/", "GET", "negative", 15),
              step("/plain/", "GET", "edges"), step("/to_json/", "GET", "edges"),
              step(USER, "GET", "coverage"), step(USER, "PATCH", "coverage"),
              step(USER, "GET", "positive", 5), step(USER, "PATCH", "positive", 5)]

# The database suite, for a variant whose manifest declares it: every coverage case (n
# at 1, 2, 499, 500, 0, 501 and of every wrong type, a missing token, other methods), a
# few generated requests (n mostly in 1..500: the cost of a request grows with it), and
# n's edge cases (fuzz_edges.N_FORMS). /updates/ goes first: the reads after it must
# show what it and the PATCHes wrote (/cached/ may show any state a row had).
QUERIES, UPDATES, FORTUNES, CACHED = fuzz_expectations.SUITE_PATHS
SUITE_PLAN = [step(UPDATES, "GET", "coverage"), step(UPDATES, "GET", "positive", 4),
              step(UPDATES, "GET", "negative", 6), step(UPDATES, "GET", "edges"),
              step(QUERIES, "GET", "coverage"), step(QUERIES, "GET", "positive", 6),
              step(QUERIES, "GET", "negative", 10), step(QUERIES, "GET", "edges"),
              step(CACHED, "GET", "coverage"), step(CACHED, "GET", "positive", 5),
              step(CACHED, "GET", "negative", 10), step(CACHED, "GET", "edges"),
              step(FORTUNES, "GET", "coverage"), step(FORTUNES, "GET", "positive", 3),
              step(FORTUNES, "GET", "negative", 3), step(FORTUNES, "GET", "edges")]
# without a database: 404 "no database" after the token, 405 for another method
SUITE_NO_DB_PLAN = [step(path, "GET", "coverage") for path in fuzz_expectations.SUITE_PATHS]


def plan_for(variant: Variant) -> list:
    """What a variant is fuzzed on: the suite's endpoints only if its manifest declares
    the suite (a server that does not is never asked for them)."""
    suite = variant.server.suite is not None          # the manifest's [suite]
    if variant.database == "none":
        return NO_DB_PLAN + (SUITE_NO_DB_PLAN if suite else [])
    return USER_PLAN + (SUITE_PLAN if suite else [])



def workers_problem(server, before: set | None) -> str:
    """'' when the server runs W workers and, for worker processes, the same ones it
    started with (a crashed worker that its supervisor replaced is still a crash)."""
    if not server.alive():
        return f"the server exited (code {server.proc.returncode})"
    check = check_workers(server, settle_s=1.0)
    if not check.passed and check.severity == "error":
        return check.detail
    if before is not None:
        now = {p.pid for p in server.worker_processes()}
        if now != before:
            return f"worker processes changed during fuzzing: {sorted(before)} -> {sorted(now)}"
    return ""


def worker_pids(server) -> set | None:
    if server.spec.worker_check.count != "processes":
        return None
    return {p.pid for p in server.worker_processes()}


@pytest.mark.server_checks          # `make test-changed` runs it for the selected servers
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.key)
def test_fuzzed_server_keeps_the_contract(variant, databases, built, tmp_path):
    endpoint = databases.get(variant.database)
    log = tmp_path / "server.log"
    plan = plan_for(variant)
    with running_server(variant, SETTINGS, endpoint, log) as running:
        server = running.server
        started = check_workers(server)      # waits until all W workers are up
        assert started.passed or started.severity == "warning", started.detail
        before = worker_pids(server)
        began = time.monotonic()
        outcome = fuzzing.fuzz(plan, fuzzing.Target(server.base_url, SETTINGS.token,
                                                     database=endpoint is not None))
        took = time.monotonic() - began
        workers = workers_problem(server, before)
    print(f"{variant.key}: {outcome.requests} requests in {took:.1f} s, statuses "
          f"{outcome.statuses}, {outcome.accepted_patches} accepted PATCHes, "
          f"{outcome.written_rows} rows /updates/ answered as written; slowest steps "
          f"{sorted(outcome.seconds.items(), key=lambda kv: -kv[1])[:4]}")
    assert not outcome.failures, outcome.report() + "\n\nserver log:\n" + log_tail(log)
    assert not workers, workers + "\n\nserver log:\n" + log_tail(log)
    if endpoint is not None:
        problems = table_problems(db.fetch_users(endpoint), outcome.updates)
        assert not problems, "\n".join(problems[:20])
        assert outcome.accepted_patches, "no PATCH was accepted: the stored-state check saw nothing"
        if any(s.path == UPDATES for s in plan):
            assert outcome.written_rows, "/updates/ answered no row: the stored-state check saw none"


# ------------------------------------------------------- the fuzzing itself is checked

FIXTURES = manifest.discover([Path(__file__).resolve().parents[1] / "fixtures" / "servers"])


def fuzzed_fixture(fixture: str, engine: str, plan: list, databases, tmp_path):
    """A fixture server (tests/fixtures/servers) fuzzed with `plan`: the outcome, and the
    table's problems afterwards."""
    variant = Variant(FIXTURES[fixture], engine, False)
    endpoint = databases[engine]
    with running_server(variant, SETTINGS, endpoint, tmp_path / "server.log") as running:
        outcome = fuzzing.fuzz(plan, fuzzing.Target(running.server.base_url, SETTINGS.token,
                                                    database=True))
    return outcome, table_problems(db.fetch_users(endpoint), outcome.updates)


@pytest.mark.parametrize("fixture, plan, defect", [
    ("broken_wrong_user", USER_PLAN, "GET /user/{id}/ 200 wrong user"),   # the row of id + 1
    # the others in make test-all: the first runs the same fuzzing code in make test
    pytest.param("broken_no_token", USER_PLAN, "200 unexpected status",  # serves requests without the token
                 marks=pytest.mark.full),
    # n clamped to 1..1000: n=501 (a coverage case and an edge) answers 501 rows, which
    # the document's maxItems refuses (a count within 1..500 is the rule's: below)
    pytest.param("broken_suite_unclamped", SUITE_PLAN, "GET /queries/ (n=501) 200",
                 marks=pytest.mark.full),
    pytest.param("broken_suite_unclamped", SUITE_PLAN, "GET /updates/ (n=501) 200",
                 marks=pytest.mark.full),
    # the messages written into the page unescaped: <script> appears raw
    pytest.param("broken_suite_unescaped", SUITE_PLAN, "GET /fortunes/ 200 wrong fortunes",
                 marks=pytest.mark.full),
], ids=lambda v: v if isinstance(v, str) else "")
def test_fuzzing_catches_a_broken_server(fixture, plan, defect, databases, tmp_path):
    """A fuzzer that passes everything is worse than none: each defect planted in
    tests/fixtures/broken_server must show up among the failures."""
    outcome, _ = fuzzed_fixture(fixture, "postgres", plan, databases, tmp_path)
    assert any(defect in key for key in outcome.failures), outcome.report()


def test_fuzzing_catches_a_broken_server_writing_rows_it_did_not_report(databases, tmp_path):
    """broken_suite_silent_write answers every /updates/ right but also sets the username
    of one row it does not answer: the table afterwards shows it (and a later read that
    happens to draw that row, held to the writes reported, may show it too)."""
    outcome, problems = fuzzed_fixture("broken_suite_silent_write", "mysql", SUITE_PLAN,
                                       databases, tmp_path)
    assert not [key for key in outcome.failures if key.startswith("GET /updates/")], outcome.report()
    assert outcome.written_rows > 1000
    # "changed without a reported write", or, when /updates/ also drew that row, its
    # stored value differing from the one /updates/ answered: the server draws the ids
    assert any("unreported" in p for p in problems), problems[:5]


@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_the_correct_suite_fixture_passes_the_suite_fuzzing(engine, databases, tmp_path):
    """The other side of the checks above: a server that does the suite right (the
    fixture's correct mode) gets no failure, and the table matches what it reported."""
    outcome, problems = fuzzed_fixture("correct_suite", engine, SUITE_PLAN, databases, tmp_path)
    assert not outcome.failures, outcome.report()
    assert not problems, "\n".join(problems[:20])
    assert outcome.written_rows > 1000 and outcome.statuses.get("GET /fortunes/ 200")


def test_edge_row_counts_agree_with_the_clamping_rule():
    """The n edge cases' hand-written row counts and fuzz_expectations' rule (which judges
    the generated requests) say the same, so neither drifts from CONTRACT.md section 6."""
    for edge in fuzz_edges.EDGES:
        if edge.rows is not None:
            url = f"http://host{edge.url_path}?{edge.query}"
            assert fuzz_expectations.expected_counts(url) == edge.rows, edge.what


def test_suite_answer_checks_see_what_the_schema_cannot():
    """What the document cannot say about a suite answer, each caught: a count within
    1..500 that is not n's, a row not as stored, /updates/' repeated ids, a column it
    must not write, a time that is not the request's; and what is right is passed."""
    expect = fuzz_expectations
    url = "http://host/queries/?n=0020"

    def user(uid, **change):
        row = dataset.expected_user(uid)
        answer = {"user_id": uid, "username": row.username, "email": row.email,
                  "created_at": row.created_at.isoformat(), "updated_at": row.updated_at.isoformat(),
                  "is_archived": row.is_archived}
        return {**answer, **change}

    def stored(uid):
        return [expect.restored(uid)]
    rows = [user(i) for i in range(1, 21)]
    assert expect.read_rows_problem(rows, url, stored) == ""
    assert "16 rows" in expect.read_rows_problem(rows[:16], url, stored)   # 0020 read as octal
    assert "user 3" in expect.read_rows_problem(rows[:2] + [user(3, username="x")] + rows[3:],
                                                url, stored)
    now = datetime.now(timezone.utc)
    written = [user(i, username=f"u{i}", updated_at=now.isoformat()) for i in (4, 9)]
    window, url = (now, now), "http://host/updates/?n=2"
    assert expect.written_rows_problem(written, url, {}, window) == ""
    assert "repeat" in expect.written_rows_problem([written[0], written[0]], url, {}, window)
    assert "email" in expect.written_rows_problem([written[0], {**written[1], "email": "e@x"}],
                                                  url, {}, window)
    late = {**written[1], "updated_at": (now + timedelta(seconds=30)).isoformat()}
    assert "time of the request" in expect.written_rows_problem([written[0], late], url, {}, window)
    # a row /updates/ wrote: /queries/ must show it, /cached/ may still show the old one
    update = expect.reported_writes(written)[1]
    assert expect.row_problem(rows[8], [update]) != ""
    assert expect.row_problem(rows[8], [expect.restored(9), update]) == ""
    assert expect.row_problem(written[1], [update]) == ""


def test_table_check_sees_writes_nobody_was_told_about():
    rows = dataset.all_users()
    assert table_problems(rows, {}) == []
    changed = list(rows)
    changed[41] = replace(rows[41], username="sneaky")
    assert table_problems(changed, {}), "a row changed without an accepted PATCH"
    later = rows[41].updated_at + timedelta(seconds=5)
    changed[41] = replace(rows[41], username="told", email="t@x", updated_at=later)
    assert table_problems(changed, {42: Update(42, "told", "t@x", later)}) == []
    assert table_problems(rows[:-1], {}), "a deleted row"
    # /updates/: username and updated_at as answered (to the millisecond), email kept
    written = {7: Update(7, "u123", rows[6].email, later, by="/updates/")}
    changed = list(rows)
    changed[6] = replace(rows[6], username="u123", updated_at=later)
    assert table_problems(changed, written) == []
    changed[6] = replace(rows[6], username="u123", updated_at=later + timedelta(milliseconds=5))
    assert table_problems(changed, written), "stored another updated_at than answered"
    changed[6] = replace(rows[6], username="u123", email="x@y", updated_at=later)
    assert table_problems(changed, written), "/updates/ changed the email"
    changed[6], changed[7] = replace(rows[6], username="u123", updated_at=later), \
        replace(rows[7], username="u9", updated_at=later)
    assert table_problems(changed, written), "a row /updates/ wrote but did not answer"
