"""Verification of the database suite's answers (CONTRACT.md, section 6): `n` clamping,
the rows of `queries` and `cached` against the contract's rows, `updates` read back
from the database, and the `fortunes` page parsed as HTML and compared row by row.

The statements behind each request are counted in `bench.verify.suite_counts`.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser

from bench.core import suite
from bench.core.dataset import ROW_COUNT, expected_fortunes, expected_user
from bench.infra import db
from bench.infra.db import Endpoint
from bench.verify.checks import Check, Client, make_check
from bench.verify.contract import (error_body_problem, json_of, media_type, parse_stamp,
                                   short, status_problem, user_problems)

# (value of n as sent, rows expected): missing, empty, not a number or below 1 is 1;
# above 500 is 500, a digit string too long for any integer type included
N_CASES = [(None, 1), ("", 1), ("abc", 1), ("0", 1), ("-3", 1), ("1.5", 1), ("7", 7),
           ("500", 500), ("501", 500), ("99999999999999999999", 500)]
ROWS_N = 20                 # rows per request when the rows themselves are checked
USERNAME = re.compile(r"^u([1-9][0-9]{0,6})$")
# a server's clock and the harness's may differ a little; updated_at must fall in the
# request's window widened by this much
CLOCK_SLACK = timedelta(seconds=2)


def request_rows(c: Client, test: str, n: str | int | None) -> tuple[list | None, list[str]]:
    """GET a suite path; the JSON array it answered, or None with the problems."""
    path = suite.PATHS[test] + ("" if n is None else f"?n={n}")
    label = f"GET {path}"
    resp, err = c.request("GET", path)
    problem = status_problem(label, resp, err, (200,))
    if problem:
        return None, [problem]
    if media_type(resp) != "application/json":
        return None, [f"{label}: Content-Type {resp.headers.get('Content-Type')!r}, "
                      "expected application/json"]
    body = json_of(resp)
    if not isinstance(body, list):
        return None, [f"{label}: body is not a JSON array: {short(body)}"]
    return body, []


def check_clamping(c: Client, test: str, cases=N_CASES) -> Check:
    problems = []
    for value, rows in cases:
        body, errors = request_rows(c, test, value)
        problems += errors
        if body is not None and len(body) != rows:
            problems.append(f"GET {suite.PATHS[test]}?n={value}: {len(body)} rows, the "
                            f"contract says {rows}")
    return make_check(f"{test} n clamping", problems,
                      f"n = {', '.join(repr(v) for v, _ in cases)} answered with the "
                      f"clamped number of rows")


def rows_problems(label: str, body: list, *, distinct: bool = False) -> list[str]:
    """Each row is the contract's row for its id; ids in range (and distinct)."""
    problems = []
    ids = [row.get("user_id") if isinstance(row, dict) else None for row in body]
    for i, (row, uid) in enumerate(zip(body, ids)):
        if type(uid) is not int or not 1 <= uid <= ROW_COUNT:
            problems.append(f"{label}: row {i} has user_id {short(uid)}, not 1..{ROW_COUNT}")
            continue
        problems += user_problems(f"{label} row {i}", row, uid,
                                  skip=("username", "updated_at") if distinct else ())
    if distinct and len(set(ids)) != len(ids):
        problems.append(f"{label}: ids repeat ({len(ids) - len(set(ids))} repeats); the "
                        f"contract asks for distinct ids")
    return problems


def check_rows(c: Client, test: str) -> Check:
    """N rows, each the contract's row; the ids drawn at random (two answers differ)."""
    problems, seen = [], []
    for _ in range(2):
        body, errors = request_rows(c, test, ROWS_N)
        problems += errors
        if body is not None:
            if len(body) != ROWS_N:
                problems.append(f"GET {suite.PATHS[test]}?n={ROWS_N}: {len(body)} rows")
            problems += rows_problems(f"GET {suite.PATHS[test]}?n={ROWS_N}", body)
            seen.append(sorted(r.get("user_id", 0) for r in body if isinstance(r, dict)))
    if len(seen) == 2 and seen[0] == seen[1]:
        problems.append(f"two answers of {test} n={ROWS_N} had the same ids {seen[0][:5]}...: "
                        f"the server must draw them at random")
    return make_check(f"{test} rows", problems, f"2 x {ROWS_N} rows equal the contract's")


def check_updates(c: Client, ep: Endpoint) -> list[Check]:
    """N distinct rows written: the answer carries the written values, and the database
    holds them (username and updated_at), the other fields untouched."""
    label = f"GET /updates/?n={ROWS_N}"
    before = datetime.now(timezone.utc)
    body, problems = request_rows(c, "updates", ROWS_N)
    after = datetime.now(timezone.utc)
    stored: list[str] = []
    if body is not None:
        if len(body) != ROWS_N:
            problems.append(f"{label}: {len(body)} rows")
        problems += rows_problems(label, body, distinct=True)
        written = {}
        for row in body:
            if not isinstance(row, dict) or type(row.get("user_id")) is not int:
                continue
            match = USERNAME.match(str(row.get("username")))
            if not match or int(match.group(1)) > 1_000_000:
                problems.append(f"{label}: user {row['user_id']} username "
                                f"{short(row.get('username'))} is not \"u\" + 1..1000000")
            stamp, err = parse_stamp(row.get("updated_at"))
            if err:
                problems.append(f"{label}: user {row['user_id']} updated_at {err}")
            elif not before - CLOCK_SLACK <= stamp <= after + CLOCK_SLACK:
                problems.append(f"{label}: user {row['user_id']} updated_at "
                                f"{row['updated_at']} is not the time of the request")
            written[row["user_id"]] = (row.get("username"), stamp)
        stored = stored_problems(ep, written)
    db.restore(ep)
    return [make_check("updates answer", problems, f"{ROWS_N} distinct rows as written"),
            make_check("updates stored", stored, f"{ROWS_N} rows read back from {ep.engine}")]


def stored_problems(ep: Endpoint, written: dict[int, tuple]) -> list[str]:
    if not written:
        return ["no row to read back"]
    marks = ", ".join(["%s"] * len(written))
    rows = {u.user_id: u for u in db.fetch_users(ep, f"user_id IN ({marks})", tuple(written))}
    problems = []
    for uid, (username, stamp) in written.items():
        row = rows.get(uid)
        if row is None:
            problems.append(f"user {uid}: no row in the database")
            continue
        if row.username != username:
            problems.append(f"database row {uid}: username {short(row.username)}, answered "
                            f"{short(username)}")
        # the database keeps microseconds; a language clock may have milliseconds only
        if stamp is not None and abs(row.updated_at - stamp) >= timedelta(milliseconds=1):
            problems.append(f"database row {uid}: updated_at {row.updated_at.isoformat()}, "
                            f"answered {stamp.isoformat()} (must answer what it wrote)")
        want = expected_user(uid)
        if (row.email, row.created_at, row.is_archived) != (want.email, want.created_at,
                                                           want.is_archived):
            problems.append(f"database row {uid}: a column other than username and "
                            f"updated_at changed")
    return problems


class _Table(HTMLParser):
    """The cells of every row of the page's tables, character references resolved."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.tables = 0
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables += 1
        elif tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self.rows:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def fortunes_problems(status_ok_resp) -> list[str]:
    """What a fortunes page gets wrong: its type, its escaping, its rows and their order."""
    resp, label, problems = status_ok_resp, "GET /fortunes/", []
    ctype = resp.headers.get("Content-Type", "")
    if media_type(resp) != "text/html" or "charset=utf-8" not in ctype.lower().replace(" ", ""):
        problems.append(f"{label}: Content-Type {ctype!r}, expected text/html; charset=utf-8")
    try:
        text = resp.content.decode("utf-8")
    except UnicodeDecodeError as exc:
        return problems + [f"{label}: body is not UTF-8 ({exc})"]
    if not text.lstrip().lower().startswith("<!doctype html>"):
        problems.append(f"{label}: not an HTML5 document (no <!DOCTYPE html> first)")
    if re.search(r"<script", text, re.I):
        problems.append(f"{label}: <script> appears unescaped: messages are not HTML-escaped")
    page = _Table()
    page.feed(text)
    page.close()
    if page.tables != 1:
        problems.append(f"{label}: {page.tables} tables, expected one")
    rows = [r for r in page.rows if r]
    if not rows or [cell.strip() for cell in rows[0]] != ["id", "message"]:
        problems.append(f"{label}: header row {short(rows[0] if rows else None)}, expected "
                        f"['id', 'message']")
    got = [tuple(r) for r in rows[1:]]
    want = [(str(i), message) for i, message in expected_fortunes()]
    if len(got) != len(want):
        problems.append(f"{label}: {len(got)} rows, expected {len(want)}")
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            problems.append(f"{label}: row {i + 1} is {short(g, 90)}, expected {short(w, 90)} "
                            f"(rows sorted by message, messages as stored, escaped once)")
            break
    return problems


def check_fortunes(c: Client) -> Check:
    resp, err = c.request("GET", "/fortunes/")
    problem = status_problem("GET /fortunes/", resp, err, (200,))
    problems = [problem] if problem else fortunes_problems(resp)
    return make_check("fortunes page", problems, f"{len(expected_fortunes())} rows, sorted, "
                      f"escaped, parsed as HTML")


def check_tokens(c: Client) -> Check:
    problems = []
    for test in suite.SUITE_TESTS:
        for token, what in ((None, "no"), (c.token + "_wrong", "a wrong")):
            label = f"GET {suite.PATHS[test]} with {what} token"
            resp, err = c.request("GET", suite.PATHS[test], token=token)
            problems.append(status_problem(label, resp, err, (401,))
                            or error_body_problem(label, resp))
    return make_check("suite token", problems, "401 on all four paths")


def check_answers(c: Client, ep: Endpoint) -> list[Check]:
    """Every answer check of the suite; the database is restored after the writes."""
    checks = [check_tokens(c), check_rows(c, "queries"), check_rows(c, "cached"),
              check_fortunes(c), check_clamping(c, "queries"),
              check_clamping(c, "cached", [(None, 1), ("abc", 1), ("0", 1), ("501", 500)])]
    checks += check_updates(c, ep)
    checks.append(check_clamping(c, "updates", [(None, 1), ("abc", 1), ("0", 1), ("3", 3)]))
    db.restore(ep)
    return checks



def verify_suite(base_url: str, *, token: str, endpoint: Endpoint, declaration,
                 processes: int, report, timeout: float = 5.0) -> list[Check]:
    """The suite's checks for a server whose manifest declares it: the answers, then the
    statements behind them (bench.verify.suite_counts), whose figures go to
    `report.queries`."""
    from bench.verify.checks import guarded
    from bench.verify.suite_counts import check_counts
    client = Client(base_url, token, timeout)
    try:
        checks = guarded("suite answers", lambda: check_answers(client, endpoint))
        return checks + guarded("suite queries", lambda: check_counts(
            client, endpoint, declaration, report.orm, processes, report))
    finally:
        client.close()


def pipelining_check(relay, declaration, report) -> Check:
    """What the relay saw on the server's database connections during verification:
    commands sent while an earlier one on the same connection was unanswered."""
    if relay is None:
        return Check("pipelining", False, "not checked: the server runs on another host "
                     "and cannot reach the relay on this one", "warning")
    seen = relay.report()
    report.queries["pipelining"] = {"requests": seen.requests, "pipelined": seen.pipelined,
                                    "max_outstanding": seen.max_outstanding,
                                    "connections": seen.connections, "opaque": seen.opaque}
    if seen.pipelined and not declaration.pipelining:
        return Check("pipelining", False, f"{seen.describe()}: pipelining that the manifest "
                     f"does not declare ([suite] pipelining = false)")
    if seen.opaque:
        return Check("pipelining", False, seen.describe(), "warning")
    return Check("pipelining", True, seen.describe()
                 + (" (declared)" if declaration.pipelining else ""))
