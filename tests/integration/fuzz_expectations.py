"""What the contract says one fuzzed request must get, beyond what the OpenAPI document
can say: the status for this token, id and body (the document lists every status an
operation may give, not which one a given request gets), the user's stored values,
the echoed parameters, the database suite's answers (how many rows n asks for once
clamped, each row as stored, /updates/' rows as written, the fortunes page), and the
table afterwards. Used by tests/integration/fuzzing.py.
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Callable
from urllib.parse import parse_qsl, urlsplit

from requests.structures import CaseInsensitiveDict

from bench.core import dataset, suite
from bench.verify.suite import CLOCK_SLACK, fortunes_problems

USER_PATH = "/user/{id}/"
ECHO_PATHS = ("/plain/", "/to_json/")
# the database suite (CONTRACT.md section 6)
QUERIES, UPDATES, FORTUNES, CACHED = (suite.PATHS[t] for t in suite.SUITE_TESTS)
SUITE_PATHS = (QUERIES, UPDATES, FORTUNES, CACHED)
DB_PATHS = (USER_PATH, *SUITE_PATHS)        # 404 "no database" when started without one
WRITTEN_USERNAME = re.compile(r"^u([1-9][0-9]{0,5}|1000000)$")     # "u" + 1..1000000


@dataclass
class Update:
    """A write the server reported: a PATCH it accepted, or a row /updates/ answered as
    written (by = "/updates/"); what the row must hold afterwards. by = "contract": the
    row as restored (only as a state a read may answer, never recorded)."""
    user_id: int
    username: str
    email: str | None
    answered_updated_at: datetime | None
    by: str = "PATCH"

    @property
    def slack(self) -> timedelta:
        """How far a stored (or later read) updated_at may be from the answered one: a
        PATCH answers the row as stored, within the second this check always allowed;
        /updates/ answers what it wrote, which the database keeps to the microsecond and
        a language's clock may give to the millisecond (bench/verify/suite.py reads it
        back so too); the restored row exactly."""
        return {"PATCH": timedelta(seconds=1),
                "/updates/": timedelta(milliseconds=1)}.get(self.by, timedelta(0))


def restored(uid: int) -> Update:
    """The contract's row for uid, as a state."""
    want = dataset.expected_user(uid)
    return Update(uid, want.username, want.email, want.updated_at, by="contract")


MAX_ID = 2_147_483_647          # the INT column's range: a larger id is never looked up


def parse_id(raw) -> int | None | bool:
    """The id a path names: an int in 1..2147483647, None for no valid id (not
    digits, 0, out of range), False when the contract leaves it open (digits with
    leading zeros: "ASCII digits, 1..2147483647" does not say whether 007 is 7)."""
    text = str(raw)
    if not (text.isascii() and text.isdigit()):
        return None
    if text != str(int(text)):
        return False
    return int(text) if 1 <= int(text) <= MAX_ID else None


def existing_id(raw) -> int | None:
    uid = parse_id(raw)
    return uid if uid and uid <= dataset.ROW_COUNT else None


def expected_statuses(call, *, database: bool, token_ok: bool,
                      body_valid: Callable[[object], bool]) -> set[int] | None:
    """The statuses the contract allows for this request (None: it leaves it open).
    Order of the checks as in servers/README.md: token, database, id, body.
    `body_valid`: does a PATCH body meet the document's UserUpdate schema."""
    method, path = call.method.upper(), call.path
    if path == "/ping/":
        return {200}
    if not token_ok:
        return {401}
    if path in ECHO_PATHS:
        return {200}
    if not database:
        return {404}
    if path in SUITE_PATHS:
        return {200}                    # n is clamped, never refused
    uid = parse_id(call.path_parameters.get("id"))
    if uid is False:
        return None
    if uid is None:
        return {404}                    # refused before any query
    found = {200} if uid <= dataset.ROW_COUNT else {404}
    if method == "GET":
        return found
    if "content-type" in {k.lower() for k in call.headers or {}}:
        return None          # a Content-Type probe: whether the body is read anyway is open
    valid = isinstance(call.body, dict) and body_valid(call.body)
    if valid:
        return found
    # a bad body for a well-formed id: 400, or 404 for a server that asks the database
    # first (the contract orders only the token, the id's form and the body)
    return {400, 422} | ({404} if uid > dataset.ROW_COUNT else set())


def user_answer_problem(call, body, updates: dict[int, Update]) -> str:
    """A 200 for /user/{id}/ is the user asked for, as stored: the contract's row with
    the last accepted PATCH's values, and a PATCH's own answer the values it sent."""
    if not isinstance(body, dict):
        return ""                       # the schema check reports it
    uid = existing_id(call.path_parameters.get("id"))
    if not uid or body.get("user_id") != uid:
        return f"answered user_id {body.get('user_id')!r} for path id {call.path_parameters.get('id')!r}"
    want = dataset.expected_user(uid)
    if call.method.upper() == "PATCH" and isinstance(call.body, dict):
        username, email = call.body.get("username"), call.body.get("email")
    elif uid in updates:
        username, email = updates[uid].username, updates[uid].email
    else:
        username, email = want.username, want.email
    got = (body.get("username"), body.get("email"), body.get("is_archived"))
    if got != (username, email, want.is_archived):
        return f"answered (username, email, is_archived) {got!r}, expected {(username, email, want.is_archived)!r}"
    created = parse_stamp(body.get("created_at"))
    if created is not None and created != want.created_at:
        return f"answered created_at {body.get('created_at')!r}, expected {want.created_at.isoformat()}"
    return ""


def echo_problem(call, response) -> str:
    """/plain/ and /to_json/ answer exactly the values sent (only judged when every
    value sent was one string: a list goes out as a repeated parameter, which the
    contract leaves open)."""
    query = call.query or {}
    if not all(isinstance(v, str) for v in query.values()):
        return ""
    values = [query.get(f"param{i}") for i in (1, 2, 3)]
    if call.path == "/plain/":
        want = ", ".join(f"param{i}={v or ''}" for i, v in enumerate(values, 1))
        got = response.content.decode("utf-8", "replace")
    else:
        want = {f"param{i}": v for i, v in enumerate(values, 1)}
        try:
            got = response.json()
        except ValueError:
            return ""                   # the schema check reports it
    return "" if got == want else f"answered {got!r}, expected {want!r}"


def parse_stamp(value) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except (AttributeError, ValueError):
        return None


def table_problems(rows: list[dataset.User], updates: dict[int, Update]) -> list[str]:
    """Differences between the table and the contract's rows with the last reported
    write per user applied: an accepted PATCH, or a row that /updates/ answered as
    written (requests were sent one at a time, so the order is known). A row that
    differs from the contract's without a reported write is one the server changed
    without saying so."""
    problems = []
    if [r.user_id for r in rows] != list(range(1, dataset.ROW_COUNT + 1)):
        problems.append(f"{len(rows)} rows, ids not exactly 1..{dataset.ROW_COUNT}")
    for row in rows:
        if not 1 <= row.user_id <= dataset.ROW_COUNT:
            continue
        want, update = dataset.expected_user(row.user_id), updates.get(row.user_id)
        if update is None:
            if row != want:
                problems.append(f"user {row.user_id} changed without a reported write (an "
                                f"accepted PATCH or a row /updates/ answered): {row} != {want}")
            continue
        sent = "last accepted PATCH sent" if update.by == "PATCH" else "/updates/ answered"
        if (row.username, row.email) != (update.username, update.email):
            problems.append(f"user {row.user_id}: stored {(row.username, row.email)!r}, "
                            f"{sent} {(update.username, update.email)!r}")
        if row.updated_at <= want.updated_at:
            problems.append(f"user {row.user_id}: updated_at {row.updated_at} did not move forward")
        if (row.created_at, row.is_archived) != (want.created_at, want.is_archived):
            problems.append(f"user {row.user_id}: created_at/is_archived changed by {update.by}")
        if update.answered_updated_at is not None and \
                abs(update.answered_updated_at - row.updated_at) >= update.slack:
            problems.append(f"user {row.user_id}: stored updated_at {row.updated_at} differs from "
                            f"the {update.by} answer's {update.answered_updated_at}")
    return problems


# ------------------------------------------------------------------ the database suite

def n_values(url: str) -> list[str]:
    """Every value of the query parameter n in the URL as sent, URL-decoded."""
    return [v for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True) if k == "n"]


def _digits_clamped(digits: str) -> int:
    """ASCII digits (any length, leading zeros) as a number clamped to 1..500, without
    int() on a long string (Python refuses more than 4300 digits)."""
    digits = digits.lstrip("0")
    return suite.N_MAX if len(digits) > 3 else suite.clamp(int(digits or "0"))


def _lax_reading(text: str) -> int | None:
    """The number a lax parser may read in a value that is not plain ASCII digits (blanks,
    a sign, non-ASCII digits, hex, an exponent or a point with an integral value, an
    infinity), clamped; None when nothing reads it as an integer."""
    t = text.strip()
    m = re.fullmatch(r"([+-]?)(\d+)", t)            # \d: any script's decimal digits
    if m:
        value = _digits_clamped("".join(str(unicodedata.digit(c)) for c in m.group(2)))
        return 1 if m.group(1) == "-" else value
    if re.fullmatch(r"[+-]?0[xX][0-9a-fA-F]+", t):
        body = t.lstrip("+-")[2:].lstrip("0")
        return 1 if t.startswith("-") else suite.clamp(int(body or "0", 16)) if len(body) < 8 else suite.N_MAX
    try:
        number = float(t)
    except ValueError:
        return None
    if math.isnan(number) or not (math.isinf(number) or number.is_integer()):
        return None
    return suite.clamp(int(max(min(number, 1e6), -1e6)))


def counts_for(value: str) -> set[int]:
    """The row counts the contract allows for one value of n: ASCII digits are the number
    clamped to 1..500 (`0020` is 20, a 1,000-digit string 500, 2**32 + 5 is 500, not 5);
    missing, empty, not a number or below 1 is 1. A form a lax parser reads as a number
    (" 5", "+5", a non-ASCII digit, "1e2", "5.0") is not one the contract calls a number,
    nor one it calls not a number: its clamped value is allowed as well as 1."""
    if value.isascii() and value.isdigit():
        return {_digits_clamped(value)}
    lax = _lax_reading(value)
    return {1} | ({lax} if lax is not None else set())


def expected_counts(url: str) -> set[int]:
    """How many rows /queries/, /updates/ or /cached/ must answer for this URL as sent.
    Several n: which one counts is open (first or last), so any of theirs."""
    values = n_values(url)
    counts = set().union(*map(counts_for, values)) if values else {1}
    if not values:      # Vert.x reads query names case-insensitively: N=5 may be n=5
        other_case = [v for k, v in parse_qsl(urlsplit(url).query, keep_blank_values=True)
                      if k == "N"]
        counts = counts.union(*map(counts_for, other_case))
    return counts


def current_state(uid: int, updates: dict[int, Update]) -> Update:
    return updates.get(uid) or restored(uid)


def row_problem(row, states: list[Update]) -> str:
    """'' when the user object is the row of its id in one of the states it may be in."""
    if not isinstance(row, dict):
        return ""                       # the schema check reports it
    uid = row.get("user_id")
    if type(uid) is not int or not 1 <= uid <= dataset.ROW_COUNT:
        return f"user_id {uid!r} is not 1..{dataset.ROW_COUNT}"
    want = dataset.expected_user(uid)
    if (parse_stamp(row.get("created_at")), row.get("is_archived")) != (want.created_at, want.is_archived):
        return (f"user {uid}: created_at, is_archived {row.get('created_at')!r}, "
                f"{row.get('is_archived')!r}, the contract's row has {want.created_at.isoformat()}, "
                f"{want.is_archived}")
    stamp = parse_stamp(row.get("updated_at"))
    for state in states:
        if (row.get("username"), row.get("email")) == (state.username, state.email) and (
                stamp is None or state.answered_updated_at is None
                or abs(stamp - state.answered_updated_at) <= state.slack):
            return ""
    told = "; ".join(f"{s.by}: {(s.username, s.email, str(s.answered_updated_at))!r}" for s in states[-3:])
    return (f"user {uid}: answered (username, email, updated_at) "
            f"{(row.get('username'), row.get('email'), row.get('updated_at'))!r}, the row "
            f"holds {told}")


def count_problem(body: list, counts: set[int], url: str) -> str:
    if len(body) in counts:
        return ""
    return (f"{len(body)} rows for n = {n_values(url)!r}, the contract says "
            f"{' or '.join(map(str, sorted(counts)))} (n clamped to 1..500)")


def read_rows_problem(body, url: str, states_of: Callable[[int], list[Update]],
                      counts: set[int] | None = None) -> str:
    """/queries/ and /cached/: as many rows as n asks for once clamped (`counts`, else
    read from the URL as sent), each the row of an id in 1..10000 in a state it may be
    in (`states_of`)."""
    if not isinstance(body, list):
        return ""                       # the schema check reports it
    problem = count_problem(body, expected_counts(url) if counts is None else counts, url)
    for i, row in enumerate(body):
        if problem:
            break
        if isinstance(row, dict) and type(row.get("user_id")) is int:
            problem = row_problem(row, states_of(row["user_id"]))
            problem = problem and f"row {i}: {problem}"
        else:
            problem = f"row {i} is {row!r:.80}, not a user object"
    return problem


def written_rows_problem(body, url: str, updates: dict[int, Update],
                         window: tuple[datetime, datetime], counts: set[int] | None = None) -> str:
    """/updates/: as many rows as n asks for once clamped, distinct ids in 1..10000, each
    the row as it was (email, created_at, is_archived) with username "u" + 1..1000000 and
    updated_at the time of the request (`window`: before it was sent, after its answer)."""
    if not isinstance(body, list):
        return ""
    problem = count_problem(body, expected_counts(url) if counts is None else counts, url)
    if problem:
        return problem
    ids = [row.get("user_id") if isinstance(row, dict) else None for row in body]
    if len(set(map(repr, ids))) != len(ids):
        return f"ids repeat ({len(ids) - len(set(map(repr, ids)))} repeats); the contract asks for N distinct ids"
    for i, (row, uid) in enumerate(zip(body, ids)):
        if type(uid) is not int or not 1 <= uid <= dataset.ROW_COUNT:
            return f"row {i}: user_id {uid!r} is not 1..{dataset.ROW_COUNT}"
        want, current = dataset.expected_user(uid), current_state(uid, updates)
        if (row.get("email"), parse_stamp(row.get("created_at")), row.get("is_archived")) != \
                (current.email, want.created_at, want.is_archived):
            return (f"row {i}: user {uid} answered email, created_at, is_archived "
                    f"{(row.get('email'), row.get('created_at'), row.get('is_archived'))!r}; "
                    f"the row holds {(current.email, want.created_at.isoformat(), want.is_archived)!r} "
                    f"(only username and updated_at are written)")
        if not WRITTEN_USERNAME.match(str(row.get("username"))):
            return f"row {i}: user {uid} username {row.get('username')!r} is not \"u\" + 1..1000000"
        stamp = parse_stamp(row.get("updated_at"))
        if stamp is None or not window[0] - CLOCK_SLACK <= stamp <= window[1] + CLOCK_SLACK:
            return (f"row {i}: user {uid} updated_at {row.get('updated_at')!r} is not the time of "
                    f"the request ({window[0].isoformat()} .. {window[1].isoformat()})")
    return ""


def reported_writes(body) -> list[Update]:
    """The rows an /updates/ answer says were written, whatever else is wrong with it:
    the table is then held to them."""
    if not isinstance(body, list):
        return []
    return [Update(row["user_id"], row.get("username"), row.get("email"),
                   parse_stamp(row.get("updated_at")), by="/updates/")
            for row in body if isinstance(row, dict) and type(row.get("user_id")) is int
            and 1 <= row["user_id"] <= dataset.ROW_COUNT]


def fortunes_page_problem(response) -> str:
    """The fortunes page as bench/verify/suite.py holds it: text/html; charset=utf-8, an
    HTML5 document, one table, the header row, the 12 rows and the added one sorted by
    message, each cell unescaping to the stored message, no raw <script>. `response`: a
    requests.Response or schemathesis's (whose header values are lists)."""
    headers = CaseInsensitiveDict({name: ", ".join(value) if isinstance(value, list) else value
                                   for name, value in response.headers.items()})
    page = SimpleNamespace(headers=headers, content=response.content)
    return "; ".join(fortunes_problems(page)[:3])
