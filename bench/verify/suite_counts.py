"""The database suite's work per request, counted by the database itself and held
against the contract and the manifest's declaration (`[suite]`, bench.core.suite):

- queries n=N: exactly N SELECTs (an `IN (...)` list or a join is 1, and fails);
- updates n=N: N SELECTs and N single-row UPDATEs, or the declared batches; a
  transaction only when declared (undeclared batching fails: fewer UPDATEs than rows);
- fortunes: one SELECT;
- cached: one SELECT per id on a miss, none for an id already in the cache.
"""
from __future__ import annotations

from typing import Callable

from bench.core import suite
from bench.core.suite import Declaration
from bench.infra import db
from bench.infra.db import Endpoint
from bench.verify import querycount
from bench.verify.checks import Check, Client, Report, make_check
from bench.verify.statements import count_check, count_problems, measure_test

COUNT_N = 20                  # rows per request in the counted bursts
BURST = {"queries": 10, "updates": 10, "fortunes": 20}
# The cache: WINDOWS windows of WINDOW requests of n=WINDOW_N on one keep-alive
# connection, so every request reaches the same server process, whose cache then holds
# exactly the ids the answers showed. Each window may send at most one SELECT per id it
# is the first to show: none for an id shown before. 4,000 draws show about 3,300 ids, so
# the last window repeats about a third of its ids: a server that does not cache, or
# caches too few rows, sends more SELECTs than it may. (That the cache holds all 10,000
# rows is checked where it matters, by the load's fill: bench/runner/cache.py.)
WINDOWS, WINDOW, WINDOW_N = 4, 10, 100
QUIET = 0.5                   # statement counts are integers: below this is none


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
        self.window: set[int] = set()       # the current window's ids
        self.closes = False

    def add(self, resp) -> None:
        self.closes |= resp.headers.get("Connection", "").lower() == "close"
        try:
            self.window.update(row["user_id"] for row in resp.json())
        except (ValueError, TypeError, KeyError):
            pass

    def close_window(self) -> int:
        """How many ids the window showed first; the window's ids join the seen ones."""
        new = len(self.window - self.ids)
        self.ids |= self.window
        self.window = set()
        return new


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
    """At most one SELECT per id on a miss, none for an id already answered (see
    WINDOWS), and some at first: a cache filled from the database, not preloaded. A
    server that closes the connection after each answer spreads the requests over its
    processes, each with its own cache: then each may fetch each id once."""
    name = "queries per cached"
    if isinstance(counter, querycount.PgXactCounter):
        return Check(name, False, "needs pg_stat_statements or MySQL's counters to count a "
                                  "cache's SELECTs (" + counter.note + ")", "warning")
    seen, rows, problems, total = Seen(), [], [], 0.0
    for _ in range(WINDOWS):
        failures: list[str] = []
        window = querycount.measure(
            counter, burst(c, "cached", WINDOW_N, WINDOW, failures, seen), quiet=False)
        if failures:
            return make_check(name, [f"{len(failures)} requests failed, first: {failures[0]}"])
        new, totals = seen.close_window(), window.totals
        total += totals.select
        rows.append({"ids_first_seen": new, "select": round(totals.select, 1)})
        if totals.update > QUIET or totals.other > QUIET:
            problems.append(f"{totals.update:.0f} UPDATE and {totals.other:.0f} other "
                            f"statements in a window of cached requests")
        if not seen.closes and totals.select > new + QUIET:
            problems.append(f"{totals.select:.0f} SELECTs for a window of {WINDOW} x "
                            f"n={WINDOW_N} whose answers showed only {new} ids not answered "
                            f"before: an id already cached was read again (no cache, or "
                            f"one that evicts)")
    if seen.closes and total > processes * len(seen.ids) + QUIET:
        problems.append(f"{total:.0f} SELECTs for {len(seen.ids)} ids over {processes} "
                        f"processes: more than one per id and process")
    if rows[0]["select"] <= QUIET:
        problems.append("no SELECT while the cache was filling: rows not read from the "
                        "database on a miss (preloaded, or answered without the database?)")
    report.queries["cached"] = {"windows": rows, "requests_per_window": WINDOW,
                                "n": WINDOW_N, "server_closed_connections": seen.closes}
    return make_check(name, problems, f"{WINDOWS} windows of {WINDOW} x n={WINDOW_N}: "
                      + ", ".join(f"{r['select']:.0f} SELECT for {r['ids_first_seen']} new ids"
                                  for r in rows) + f" ({counter.method})")
