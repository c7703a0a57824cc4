"""What the contract says one fuzzed request must get, beyond what the OpenAPI document
can say: the status for this token, id and body (the document lists every status an
operation may give, not which one a given request gets), the user's stored values,
the echoed parameters, and the table afterwards. Used by tests/integration/fuzzing.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable

from bench.core import dataset

USER_PATH = "/user/{id}/"
ECHO_PATHS = ("/plain/", "/to_json/")


@dataclass
class Update:
    """A PATCH the server accepted: what the row must hold afterwards."""
    user_id: int
    username: str
    email: str
    answered_updated_at: datetime | None


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
    """Differences between the table and the contract's rows with the last accepted
    PATCH per user applied (they were sent one at a time, so the order is known)."""
    problems = []
    if [r.user_id for r in rows] != list(range(1, dataset.ROW_COUNT + 1)):
        problems.append(f"{len(rows)} rows, ids not exactly 1..{dataset.ROW_COUNT}")
    for row in rows:
        if not 1 <= row.user_id <= dataset.ROW_COUNT:
            continue
        want, update = dataset.expected_user(row.user_id), updates.get(row.user_id)
        if update is None:
            if row != want:
                problems.append(f"user {row.user_id} changed without an accepted PATCH: {row} != {want}")
            continue
        if (row.username, row.email) != (update.username, update.email):
            problems.append(f"user {row.user_id}: stored {(row.username, row.email)!r}, "
                            f"last accepted PATCH sent {(update.username, update.email)!r}")
        if row.updated_at <= want.updated_at:
            problems.append(f"user {row.user_id}: updated_at {row.updated_at} did not move forward")
        if (row.created_at, row.is_archived) != (want.created_at, want.is_archived):
            problems.append(f"user {row.user_id}: created_at/is_archived changed by a PATCH")
        if update.answered_updated_at is not None and \
                abs((update.answered_updated_at - row.updated_at).total_seconds()) >= 1:
            problems.append(f"user {row.user_id}: stored updated_at {row.updated_at} differs from "
                            f"the answered {update.answered_updated_at}")
    return problems
