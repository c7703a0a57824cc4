"""The database suite's work per request, counted by the database itself and held
against the contract and the manifest's declaration (`[suite]`, bench.core.suite):

- queries n=N: exactly N SELECTs (an `IN (...)` list or a join is 1, and fails);
- updates n=N: N SELECTs and N single-row UPDATEs, or the declared batches; a
  transaction only when declared (undeclared batching fails: fewer UPDATEs than rows);
- fortunes: one SELECT;
- cached: while the cache fills, never more than one SELECT per id; once full, none.
"""
from __future__ import annotations

from typing import Callable

from bench.core import suite
from bench.core.dataset import ROW_COUNT
from bench.core.suite import Declaration
from bench.infra import db
from bench.infra.db import Endpoint
from bench.verify import querycount
from bench.verify.checks import Check, Client, Report, make_check
from bench.verify.statements import NOISE, count_check, count_problems, measure_test

COUNT_N = 20                  # rows per request in the counted bursts
BURST = {"queries": 10, "updates": 10, "fortunes": 20}
# The cache fills with windows of WINDOW requests of n=500. On one keep-alive connection
# every request reaches the same server process, so once the answers have shown every
# one of the 10,000 ids, that process has cached them all (about 10,000 x ln(10,000) =
# 92,000 draws). A server that closes the connection after each answer spreads the
# requests over its P processes: then P x SPREAD_DRAWS draws are made (each process
# then misses an id with a chance of e^-15 if the spread is even) before counting.
WINDOW, WINDOW_N = 10, suite.N_MAX
SPREAD_DRAWS = 150_000
DRAW_LIMIT = 400_000          # per process: past this the cache does not hold the rows
WARM_CHECK = 20               # requests of n=100 counted once the cache is full


def burst(c: Client, test: str, n: int | None, count: int, failures: list[str],
          seen: "Seen | None" = None) -> Callable[[], int]:
    path = suite.path_for(test, n)

    def run() -> int:
        for _ in range(count):
            resp, err = c.request("GET", path)
            if resp is None or resp.status_code != 200:
                failures.append(err or f"GET {path}: status {resp.status_code}")
            elif seen is not None:
                seen.add(resp)
        return count
    return run


class Seen:
    """The ids the cached answers showed, and whether the server closed connections."""

    def __init__(self):
        self.ids: set[int] = set()
        self.closes = False

    def add(self, resp) -> None:
        self.closes |= resp.headers.get("Connection", "").lower() == "close"
        try:
            self.ids.update(row["user_id"] for row in resp.json())
        except (ValueError, TypeError, KeyError):
            pass

    def covered(self, draws: int, processes: int) -> bool:
        return len(self.ids) >= ROW_COUNT and (
            not self.closes or processes <= 1 or draws >= processes * SPREAD_DRAWS)


def rules(test: str, n: int, decl: Declaration) -> tuple[dict, float]:
    """(SELECT and UPDATE (min, max) per request, transaction statements allowed)."""
    if test == "queries":
        return {"select": (n, n), "update": (0, 0)}, 0
    if test == "updates":
        writes = decl.update_statements(n)
        return {"select": (n, n), "update": (writes, writes)}, 2 if decl.transaction else 0
    return {"select": (1, 1), "update": (0, 0)}, 0       # fortunes


def explain(test: str, errors: list[str], decl: Declaration) -> list[str]:
    """Say what a wrong count usually means, in the suite's terms."""
    hints = []
    if test == "queries" and any("requires" in e for e in errors):
        hints.append("fewer SELECTs than rows: one IN (...) list or a join instead of one "
                     "SELECT by primary key per row")
    if test == "updates" and any("UPDATE" in e and "requires" in e for e in errors):
        hints.append(f"fewer UPDATEs than declared ({decl.describe()}): batching that the "
                     f"manifest does not declare")
    return errors + hints


def check_counts(c: Client, ep: Endpoint, decl: Declaration, orm: bool, processes: int,
                 report: Report) -> list[Check]:
    counter = querycount.open_counter(ep)
    checks = []
    try:
        for test in ("queries", "updates", "fortunes"):
            n = COUNT_N if test in suite.N_TESTS else None
            allowed, transaction = rules(test, n or 1, decl)
            title = suite.title(test, n)

            def problems(per, t=test, a=allowed, tx=transaction, name=title):
                return explain(t, count_problems(name, per, orm, a, tx), decl)
            window, failures, attempts = measure_test(
                counter, lambda f, t=test, n=n: burst(c, t, n, BURST[t], f), problems)
            report.queries[title] = dict(window.to_dict(), attempts=attempts)
            checks.append(count_check(f"queries per {title}", window, failures, attempts,
                                      orm, problems))
            if test == "updates":
                db.restore(ep)
        checks.append(check_cache(c, counter, processes, report))
    finally:
        counter.close()
    return checks


def check_cache(c: Client, counter, processes: int, report: Report) -> Check:
    """Fill the cache with n=500 requests until every id has been seen (see WINDOW) and
    a window of them sent no SELECT, then count a burst of n=100: zero statements. While
    it fills, at most one SELECT per id drawn, and some at first (a cache filled from
    the database, on a miss)."""
    name = "queries per cached (warm)"
    if isinstance(counter, querycount.PgXactCounter):
        return Check(name, False, "needs pg_stat_statements or MySQL's counters to count a "
                                  "warm cache (" + counter.note + ")", "warning")
    windows, draws, limit, seen = [], 0, DRAW_LIMIT * max(1, processes), Seen()
    problems: list[str] = []
    while draws < limit:
        failures: list[str] = []
        window = querycount.measure(
            counter, burst(c, "cached", WINDOW_N, WINDOW, failures, seen), quiet=False)
        draws += WINDOW * WINDOW_N
        if failures:
            return make_check(name, [f"{len(failures)} requests failed, first: {failures[0]}"])
        per = window.per_request()
        windows.append(round(per.select, 1))
        if per.select > WINDOW_N + NOISE or per.update > NOISE or per.other > NOISE:
            problems.append(f"while filling: {per.select:.1f} SELECT, {per.update:.1f} UPDATE, "
                            f"{per.other:.1f} other per request of {WINDOW_N} ids (at most one "
                            f"SELECT per id, nothing else)")
            break
        if per.select <= NOISE and seen.covered(draws, processes):
            break
    else:
        problems.append(f"still {windows[-1]} SELECTs per request after {draws:,} ids drawn: "
                        f"the cache evicts, expires or holds fewer than 10,000 rows")
    if windows and windows[0] <= NOISE and not problems:
        problems.append("no SELECT even while the cache was empty: rows not read from the "
                        "database on a miss (preloaded, or answered without the database?)")
    report.queries["cached fill"] = {"select_per_request": windows, "ids_drawn": draws,
                                     "n": WINDOW_N, "requests_per_window": WINDOW,
                                     "server_closed_connections": seen.closes}
    if problems:
        return make_check(name, problems)
    failures = []
    final = querycount.measure(counter, burst(c, "cached", 100, WARM_CHECK, failures))
    problems = [f"{len(failures)} requests failed, first: {failures[0]}"] if failures else []
    report.queries["cached n=100 (warm)"] = final.to_dict()
    per = final.per_request()
    if not failures and per.total() > NOISE:
        problems.append(f"a warm cache still sends {per.select:.2f} SELECT, {per.update:.2f} "
                        f"UPDATE, {per.other:.2f} other, {per.transaction or 0:.2f} transaction "
                        f"statements per request")
    return make_check(name, problems, f"filled after {draws:,} ids drawn ({len(windows)} "
                      f"windows of {WINDOW} x n={WINDOW_N}; SELECTs per request: "
                      f"{', '.join(map(str, windows[:8]))}{' ...' if len(windows) > 8 else ''}); "
                      f"then 0 statements over {WARM_CHECK} x n=100 ({final.method})")
