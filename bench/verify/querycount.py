"""Counting the statements a server sends to its database, per request.

A server that answers correctly but does two round trips where the contract allows
one would win or lose on something the benchmark does not mean to measure, so
verification counts the work behind a burst of requests, on the database itself:

- PostgreSQL: `pg_stat_statements` (calls per normalised statement). Statements that
  name the `users` table are classified as SELECT / UPDATE / other; transaction and
  session control (BEGIN, COMMIT, ROLLBACK, SAVEPOINT, SET, ...) is counted apart.
  We diff two snapshots instead of calling `pg_stat_statements_reset()`: the result is
  the same, and resetting a shared server's statistics is a side effect nobody asked for.
  Blind spot (measured on PostgreSQL 15): a *utility* statement (BEGIN, COMMIT, SET)
  that a driver prepares and executes again through the extended protocol is counted at
  its first execution only (pg_stat_statements zeroes the cached plan's query id), so a
  raw driver preparing its BEGIN/COMMIT would pass unseen here; sent as simple queries
  (asyncpg's and psycopg's transaction(), SQLAlchemy, Django) they are counted.
  Plannable statements (SELECT 1, UPDATE, ...) are counted however they are sent.
- PostgreSQL without the extension: `pg_stat_database` transaction counters and the
  `users` table's scan/update counters from `pg_stat_user_tables`. Those are flushed
  by backends lazily (up to ~10 s on PostgreSQL 15), so this waits, and it is only an
  approximation: the note says so.
- MySQL / MariaDB: `SHOW GLOBAL STATUS` deltas of the Com_* counters (prepared
  statement executions count in Com_select/Com_update too). The harness's own cost of
  a snapshot is measured once (an empty window) and subtracted.

All counters are server-wide, so anything else using the database server during the
window shows up as extra statements; callers repeat a measurement that looks too high
(see `bench.verify`) and keep the quietest one.
"""
from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from typing import Callable

from bench.infra.db import Endpoint, connect

KINDS = ("select", "update", "transaction", "other")

# Leading keywords of transaction / session control statements.
TX_KEYWORDS = {"BEGIN", "START", "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT",
               "RELEASE", "SET"}

_COMMENTS = re.compile(r"/\*.*?\*/|--[^\n]*", re.S)
# the contract's tables: statements naming them are the work; others are "other"
_USERS = re.compile(r"\b(users|fortune)\b", re.I)
_HARNESS = re.compile(r"pg_stat_statements|pg_stat_database|pg_stat_user_tables", re.I)


@dataclass
class Counts:
    select: float = 0.0
    update: float = 0.0
    transaction: float | None = 0.0   # None: the method cannot tell
    other: float = 0.0

    def minus(self, other: "Counts") -> "Counts":
        tx = None if self.transaction is None or other.transaction is None \
            else self.transaction - other.transaction
        return Counts(self.select - other.select, self.update - other.update, tx,
                      self.other - other.other)

    def divided(self, n: int) -> "Counts":
        n = max(n, 1)
        return Counts(self.select / n, self.update / n,
                      None if self.transaction is None else self.transaction / n,
                      self.other / n)

    def total(self) -> float:
        return self.select + self.update + (self.transaction or 0) + self.other


@dataclass
class Window:
    """One measured burst."""
    method: str
    requests: int          # requests sent in the burst
    totals: Counts         # statements seen during the burst
    valid: bool = True     # False: counters went backwards (reset / evicted) meanwhile
    note: str = ""

    def per_request(self) -> Counts:
        return self.totals.divided(self.requests)

    def to_dict(self) -> dict:
        per = self.per_request()
        return {"method": self.method, "requests": self.requests,
                "per_request": {k: (None if v is None else round(v, 3))
                                for k, v in asdict(per).items()},
                "totals": asdict(self.totals), "note": self.note}


def classify(query: str) -> str | None:
    """'select' | 'update' | 'transaction' | 'other', or None for the harness's own."""
    text = _COMMENTS.sub(" ", query).strip().lstrip("(").strip()
    if _HARNESS.search(text):
        return None
    keyword = (text.split(None, 1) or [""])[0].upper().rstrip(";")
    if keyword in TX_KEYWORDS:
        return "transaction"
    if not _USERS.search(text):
        return "other"
    if keyword == "UPDATE" or (keyword == "WITH" and re.search(r"\bupdate\b", text, re.I)):
        return "update"
    if keyword in ("SELECT", "WITH", "TABLE", "VALUES"):
        return "select"
    return "other"


class PgStatementsCounter:
    method = "pg_stat_statements"
    note = "statements on table users counted by pg_stat_statements"

    def __init__(self, ep: Endpoint):
        self.conn = connect(ep)
        try:
            cur = self.conn.cursor()
            cur.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            cur.execute("SELECT count(*) FROM pg_stat_statements")   # fails if not preloaded
            cur.fetchall()
        except Exception:
            self.conn.close()
            raise

    def snapshot(self) -> dict:
        cur = self.conn.cursor()
        cur.execute("SELECT userid, queryid, query, calls FROM pg_stat_statements "
                    "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())")
        snap: dict = {}
        for userid, queryid, query, calls in cur.fetchall():
            key = (userid, queryid)
            prev = snap.get(key, (query, 0))
            snap[key] = (query, prev[1] + int(calls))
        return snap

    def delta(self, before: dict, after: dict) -> tuple[Counts, bool]:
        counts = Counts()
        valid = all(key in after and after[key][1] >= calls for key, (_, calls) in before.items())
        for key, (query, calls) in after.items():
            n = calls - before.get(key, ("", 0))[1]
            kind = classify(query or "")
            if n > 0 and kind is not None:
                setattr(counts, kind, getattr(counts, kind) + n)
        return counts, valid

    def settle(self) -> None:
        """pg_stat_statements is updated when each statement ends: nothing to wait for."""

    def close(self) -> None:
        self.conn.close()


class PgXactCounter:
    """Fallback without pg_stat_statements: transaction and table counters."""
    method = "pg_stat_database"
    SQL = ("SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database "
           "        WHERE datname = current_database()),"
           "       (SELECT coalesce(idx_scan, 0) + coalesce(seq_scan, 0) FROM pg_stat_user_tables "
           "        WHERE relname = 'users' ORDER BY (schemaname = 'public') DESC LIMIT 1),"
           "       (SELECT n_tup_upd FROM pg_stat_user_tables "
           "        WHERE relname = 'users' ORDER BY (schemaname = 'public') DESC LIMIT 1)")
    FLUSH_WAIT = 11.0      # PostgreSQL 15 backends flush pending stats at most every 10 s when idle

    def __init__(self, ep: Endpoint, reason: str = ""):
        self.ep = ep
        self.taken = 0
        self.note = ("APPROXIMATE (pg_stat_statements unavailable"
                     + (f": {reason}" if reason else "") + "): SELECTs = index/seq scans on users"
                     " minus updated rows, UPDATEs = updated rows (pg_stat_user_tables); "
                     "transaction statements cannot be told apart (pg_stat_database only has "
                     "transactions)")

    def snapshot(self) -> tuple:
        # A fresh connection each time: a backend flushes its own statistics at exit,
        # so the harness's own transaction (exactly one per snapshot) is accounted for.
        self.taken += 1
        with connect(self.ep) as conn:
            cur = conn.cursor()
            cur.execute(self.SQL)
            row = cur.fetchone()
        return self.taken, tuple(int(v or 0) for v in row)

    def delta(self, before: tuple, after: tuple) -> tuple[Counts, bool]:
        (n0, (x0, s0, u0)), (n1, (x1, s1, u1)) = before, after
        own = n1 - n0                      # harness snapshots committed in between
        xacts, scans, updates = x1 - x0 - own, s1 - s0, u1 - u0
        valid = min(xacts, scans, updates) >= 0
        self.last_xacts = xacts
        return Counts(select=max(scans - updates, 0), update=updates, transaction=None), valid

    def settle(self) -> None:
        """Wait until the servers' backends have flushed their statistics."""
        time.sleep(self.FLUSH_WAIT)
        last, stable_since = None, time.monotonic()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            _, (_, *now) = self.snapshot()     # the users table's counters: our own snapshots
            if now != last:
                last, stable_since = now, time.monotonic()
            elif time.monotonic() - stable_since >= 1.5:
                return
            time.sleep(0.5)

    def close(self) -> None:
        pass


class MySqlStatusCounter:
    method = "SHOW GLOBAL STATUS"
    note = ("server-wide Com_* counters (SELECT = Com_select + Qcache_hits, cannot tell "
            "tables apart); harness's own cost of a snapshot subtracted")
    VARS = {
        "select": ("Com_select", "Qcache_hits"),
        "update": ("Com_update", "Com_update_multi"),
        "transaction": ("Com_begin", "Com_commit", "Com_rollback", "Com_savepoint",
                        "Com_rollback_to_savepoint", "Com_release_savepoint", "Com_set_option"),
        "other": ("Com_insert", "Com_delete", "Com_replace", "Com_insert_select"),
    }

    def __init__(self, ep: Endpoint):
        self.conn = connect(ep)
        names = [v for group in self.VARS.values() for v in group]
        self.sql = "SHOW GLOBAL STATUS WHERE Variable_name IN (%s)" % ", ".join(
            f"'{n}'" for n in names)
        # The cost of one snapshot as seen by the next one: the smallest of a few empty
        # windows (anything above that was another client's statement).
        snaps = [self.snapshot() for _ in range(4)]
        windows = [self._counts(a, b) for a, b in zip(snaps, snaps[1:])]
        self.overhead = Counts(*(min(getattr(w, k) for w in windows) for k in KINDS))

    def snapshot(self) -> dict:
        cur = self.conn.cursor()
        cur.execute(self.sql)
        return {name: int(value) for name, value in cur.fetchall()}

    def _counts(self, before: dict, after: dict) -> Counts:
        return Counts(**{kind: float(sum(after.get(v, 0) - before.get(v, 0) for v in names))
                         for kind, names in self.VARS.items()})

    def delta(self, before: dict, after: dict) -> tuple[Counts, bool]:
        raw = self._counts(before, after).minus(self.overhead)
        valid = all(after.get(k, 0) >= v for k, v in before.items())
        return Counts(*(max(getattr(raw, k), 0.0) for k in KINDS)), valid

    def settle(self) -> None:
        """Global status sums the live threads' counters on read: nothing to wait for."""

    def close(self) -> None:
        self.conn.close()


def open_counter(ep: Endpoint, *, use_statements: bool = True):
    """The best counter the database offers (PostgreSQL falls back if it must)."""
    if ep.engine == "mysql":
        return MySqlStatusCounter(ep)
    if use_statements:
        try:
            return PgStatementsCounter(ep)
        except Exception as exc:  # noqa: BLE001 - extension missing / not preloaded / no rights
            return PgXactCounter(ep, reason=str(exc).strip().splitlines()[0][:160])
    return PgXactCounter(ep, reason="disabled by caller")


def wait_quiet(counter, *, window: float = 0.3, timeout: float = 5.0) -> bool:
    """Wait (up to `timeout`) for a `window` in which nobody else touches the counters.

    On a dedicated database server this returns at once; on a shared one it avoids
    measuring while another client is busy. Skipped where snapshots are slow."""
    if isinstance(counter, PgXactCounter):
        return True
    deadline = time.monotonic() + timeout
    while True:
        before = counter.snapshot()
        time.sleep(window)
        counts, valid = counter.delta(before, counter.snapshot())
        if valid and counts.total() == 0:
            return True
        if time.monotonic() > deadline:
            return False


def measure(counter, burst: Callable[[], int], *, quiet: bool = True) -> Window:
    """Run `burst` (it returns how many requests it sent) between two snapshots."""
    was_quiet = wait_quiet(counter) if quiet else True
    before = counter.snapshot()
    requests = burst()
    counter.settle()
    after = counter.snapshot()
    totals, valid = counter.delta(before, after)
    note = counter.note + ("" if was_quiet else "; the database server was never idle before this burst")
    if isinstance(counter, PgXactCounter):
        note += f"; {getattr(counter, 'last_xacts', 0) / max(requests, 1):.2f} transactions/request"
    return Window(counter.method, requests, totals, valid, note)
