"""Work per request, counted by the database itself: a burst of `get user` and
`update user` requests against a verified server, and the statements the database saw per
request, held against the contract (exactly one SELECT; one UPDATE and at most one SELECT;
nothing else). A server that does twice the work of another is caught before it is timed."""
from __future__ import annotations

import random
import secrets
from typing import Callable

from bench.core.dataset import ROW_COUNT
from bench.infra import db
from bench.infra.db import Endpoint
from bench.verify import querycount
from bench.verify.checks import Check, Client, Report

NOISE = 0.05                 # counts may be off by 5% of the burst (server-wide counters)
# BEGIN/COMMIT/ROLLBACK/SAVEPOINT/SET per request an ORM variant may send (an ORM's
# session or pool often wraps or resets; it is part of what using the ORM costs, and the
# figures are in the verification report). Raw variants may send none.
TX_TOLERANCE = 3
MEASURE_ATTEMPTS = 3         # a too-high count is re-measured: other clients only add noise


def get_burst(c: Client, n: int, rng: random.Random, failures: list[str]) -> Callable[[], int]:
    def run() -> int:
        for _ in range(n):
            uid = rng.randint(1, ROW_COUNT)
            resp, err = c.request("GET", f"/user/{uid}/")
            if resp is None or resp.status_code != 200:
                failures.append(err or f"GET /user/{uid}/: status {resp.status_code}")
        return n
    return run


def update_burst(c: Client, n: int, rng: random.Random, failures: list[str]) -> Callable[[], int]:
    def run() -> int:
        for _ in range(n):
            uid = rng.randint(1, ROW_COUNT)
            body = {"username": f"burst_{secrets.token_hex(4)}", "email": f"{secrets.token_hex(4)}@verify.example"}
            resp, err = c.request("PATCH", f"/user/{uid}/", json_body=body)
            if resp is None or resp.status_code != 200:
                failures.append(err or f"PATCH /user/{uid}/: status {resp.status_code}")
        return n
    return run


# allowed statements per request: (min, max) for SELECT and UPDATE
ALLOWED = {"get user": {"select": (1, 1), "update": (0, 0)},
           "update user": {"select": (0, 1), "update": (1, 1)}}


def count_problems(test: str, per: querycount.Counts, orm: bool,
                   allowed: dict[str, tuple[float, float]] | None = None,
                   transaction: float = 0) -> list[str]:
    """What breaks the statement rules in one measured test, with NOISE slack either way.
    `allowed`: (min, max) per request for SELECT and UPDATE (default: the test's in
    ALLOWED); `transaction`: transaction statements a raw driver may send per request
    (declared by its manifest, e.g. BEGIN and COMMIT around a batch of updates)."""
    errors = []
    for kind, (low, high) in (allowed or ALLOWED[test]).items():
        value = getattr(per, kind)
        allows = f"{low:g}" if low == high else f"{low:g} to {high:g}"
        if value > high + NOISE:
            errors.append(f"does {round(value, 2)} {kind.upper()} per {test}, contract allows {allows}")
        elif value < low - NOISE:
            errors.append(f"does {round(value, 2)} {kind.upper()} per {test}, contract requires {allows} "
                          "(answers without asking the database?)")
    if per.other > NOISE:
        errors.append(f"does {round(per.other, 2)} other statements per {test} (statements "
                      "that do not name the users table, such as a SELECT 1 pre-ping or a "
                      "session reset), contract allows 0")
    tx = per.transaction
    if tx is not None and not orm and tx > transaction + NOISE:
        # a raw driver in autocommit sends exactly the contract's statements; BEGIN/COMMIT
        # around them is work the other raw variants do not do
        errors.append(f"raw driver does {round(tx, 2)} transaction statements per {test} "
                      f"(BEGIN/COMMIT/SET...), allowed {transaction:g}"
                      + ("" if transaction else " (no transaction declared)"))
    elif tx is not None and tx > TX_TOLERANCE + transaction + NOISE:
        errors.append(f"does {round(tx, 2)} transaction statements per {test}, ORM tolerance "
                      f"{TX_TOLERANCE + transaction:g}")
    return errors


Problems = Callable[[querycount.Counts], list[str]]


def measure_test(counter, make_burst: Callable[[list[str]], Callable[[], int]],
                 problems: Problems) -> tuple[querycount.Window, list[str], int]:
    """Measure; re-measure up to MEASURE_ATTEMPTS times while the count looks too high or
    the counters went backwards (other clients of the database server only ever add)."""
    best, failures, attempts = None, [], 0
    for attempts in range(1, MEASURE_ATTEMPTS + 1):
        failures.clear()
        window = querycount.measure(counter, make_burst(failures))
        if failures:                       # requests failed: the count means nothing
            return window, failures, attempts
        if not window.valid:               # counters reset meanwhile: measure again
            continue
        if best is None or window.totals.total() < best.totals.total():
            best = window
        errors = problems(best.per_request())
        if not errors or any("requires" in e for e in errors):   # too few is never noise
            break
    if best is None:
        best = window
    return best, failures, attempts


def check_query_counts(c: Client, ep: Endpoint, orm: bool, burst: int,
                       rng: random.Random, report: Report) -> list[Check]:
    counter = querycount.open_counter(ep)
    checks = []
    try:
        report.queries["method"] = counter.method
        for test, maker in (("get user", get_burst), ("update user", update_burst)):
            def problems(per, t=test):
                return count_problems(t, per, orm)
            window, failures, attempts = measure_test(
                counter, lambda f, m=maker: m(c, burst, rng, f), problems)
            report.queries[test] = dict(window.to_dict(), attempts=attempts)
            checks.append(count_check(f"queries per {test}", window, failures, attempts, orm,
                                      problems))
            if test == "update user":
                db.restore(ep)
    finally:
        counter.close()
    return checks


def count_check(name: str, window: querycount.Window, failures: list[str], attempts: int,
                orm: bool, problems: Problems) -> Check:
    per = window.per_request()
    measured = (f"{round(per.select, 2)} SELECT, {round(per.update, 2)} UPDATE, "
                f"{round(per.other, 2)} other, "
                + ("? " if per.transaction is None else f"{round(per.transaction, 2)} ")
                + f"transaction statements per request over {window.requests} requests "
                f"({window.method}; tolerance ±{NOISE:.0%} of the burst, transaction statements "
                + (f"up to {TX_TOLERANCE}/request" if orm else "none (raw driver)")
                + (f"; best of {attempts} attempts" if attempts > 1 else "") + ")")
    if failures:
        return Check(name, False, f"{len(failures)} of {window.requests} burst requests failed, "
                                  f"first: {failures[0]}")
    if not window.valid:
        return Check(name, False, "database counters went backwards during the burst "
                                  "(reset by someone else?); cannot count")
    errors = problems(per)
    if errors:
        return Check(name, False, "; ".join(errors) + f" [{measured}]")
    return Check(name, True, measured + (f"; {window.note}" if window.method == "pg_stat_database" else ""))
