"""Every server variant fuzzed against docs/openapi.yaml (the contract's HTTP API).

bench/verify checks the answers the contract names; this throws a few hundred other
requests at the same servers (schemathesis's boundary cases and generated data: odd
ids, bodies with wrong types or extra keys, arbitrary Unicode, missing or wrong tokens,
other methods; plus raw requests no schema describes, tests/integration/fuzz_edges.py)
and holds every answer to the documented status codes, content types and schemas,
never a 5xx, and to what the contract says that request gets. Then: the server still
runs with the workers it started with, and the table holds exactly the contract's rows
plus the PATCHes the server accepted.

Each variant is started by bench.infra.lifecycle.running_server (the code every run
uses) against the session's freshly restored databases. Database variants are fuzzed
on the user endpoints; the plain / to json / ping endpoints need no database and are
fuzzed once per server, on its "none" variant (which also answers the user endpoints
with 404). The requests are made once and are the same in every run
(tests/integration/fuzzing.py), so a failure reproduces.
"""
from __future__ import annotations

import os
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from bench.core import dataset, manifest
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra import db
from bench.infra.lifecycle import running_server
from bench.infra.server import log_tail
from bench.verify.workers import check_workers
from tests.conftest import TEST_SERVER_PORT
from tests.integration import fuzzing
from tests.integration.fuzz_expectations import Update, table_problems

pytestmark = pytest.mark.integration


# Reference servers (manifest `reference = true`, e.g. nginx) answer only plain and to
# json from their configuration: they do not implement the whole contract.
SPECS = {i: s for i, s in manifest.discover().items() if not s.reference}
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


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.key)
def test_fuzzed_server_keeps_the_contract(variant, databases, built, tmp_path):
    endpoint = databases.get(variant.database)
    log = tmp_path / "server.log"
    plan = NO_DB_PLAN if endpoint is None else USER_PLAN
    with running_server(variant, SETTINGS, endpoint, log) as running:
        server = running.server
        started = check_workers(server)      # waits until all W workers are up
        assert started.passed or started.severity == "warning", started.detail
        before = worker_pids(server)
        outcome = fuzzing.fuzz(plan, fuzzing.Target(server.base_url, SETTINGS.token,
                                                     database=endpoint is not None))
        workers = workers_problem(server, before)
    print(f"{variant.key}: {outcome.requests} requests, statuses {outcome.statuses}, "
          f"{outcome.accepted_patches} accepted PATCHes")
    assert not outcome.failures, outcome.report() + "\n\nserver log:\n" + log_tail(log)
    assert not workers, workers + "\n\nserver log:\n" + log_tail(log)
    if endpoint is not None:
        problems = table_problems(db.fetch_users(endpoint), outcome.updates)
        assert not problems, "\n".join(problems[:20])
        assert outcome.updates, "no PATCH was accepted: the stored-state check saw nothing"


# ------------------------------------------------------- the fuzzing itself is checked

FIXTURES = manifest.discover([Path(__file__).resolve().parents[1] / "fixtures" / "servers"])


@pytest.mark.parametrize("fixture, defect", [
    ("broken_wrong_user", "200 wrong user"),          # answers the row of id + 1
    ("broken_no_token", "200 unexpected status"),     # serves requests without the token
])
def test_fuzzing_catches_a_broken_server(fixture, defect, databases, tmp_path):
    """A fuzzer that passes everything is worse than none: each defect planted in
    tests/fixtures/broken_server must show up among the failures."""
    variant = Variant(FIXTURES[fixture], "postgres", False)
    with running_server(variant, SETTINGS, databases["postgres"], tmp_path / "server.log") as running:
        outcome = fuzzing.fuzz(USER_PLAN, fuzzing.Target(running.server.base_url, SETTINGS.token,
                                                         database=True))
    assert any(defect in key for key in outcome.failures), outcome.report()


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
