"""Verification: does a running server answer what the contract says, before we time it?

A requests/second figure from a server that returns wrong rows, ignores the token or
does twice the database work is worth nothing, so every case is verified first.
Every answer is compared with the truth computed by `bench.dataset.expected_user`,
never with what the (possibly corrupted) database holds. Every check group runs even
after an earlier one failed, so one report lists every problem at once.
"""
from __future__ import annotations

import json
import random
import re
import secrets
from datetime import datetime, timedelta
from typing import Callable

import requests

from bench.infra import db
from bench.verify.checks import Check, Client, Report, guarded, make_check
from bench.verify.statements import check_query_counts
from bench.core.dataset import ROW_COUNT, expected_user
from bench.infra.db import Endpoint

USER_KEYS = ("user_id", "username", "email", "created_at", "updated_at", "is_archived")
FIXED_IDS = (1, 10, 42, 9999, 10000)
RANDOM_IDS = 3
MISSING_IDS = ("0", str(ROW_COUNT + 1), "99999999999", "abc", "-1")
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def media_type(resp: requests.Response) -> str:
    return resp.headers.get("Content-Type", "").split(";")[0].strip().lower()


def json_of(resp: requests.Response):
    try:
        return json.loads(resp.content.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None


def short(value, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def status_problem(label: str, resp, error: str, expected: tuple[int, ...]) -> str:
    """'' if resp has one of the expected statuses, else a message."""
    if resp is None:
        return error
    if resp.status_code in expected:
        return ""
    want = " or ".join(map(str, expected))
    extra = " (a 5xx is never allowed)" if resp.status_code >= 500 else ""
    return f"{label}: status {resp.status_code}, expected {want}{extra}"


def error_body_problem(label: str, resp) -> str:
    body = json_of(resp)
    if not (isinstance(body, dict) and isinstance(body.get("error"), str)):
        return f"{label}: body {short(resp.content)} is not JSON {{\"error\": \"...\"}}"
    return ""


def parse_stamp(value) -> tuple[datetime | None, str]:
    if not isinstance(value, str) or not RFC3339.match(value):
        return None, f"{short(value)} is not RFC 3339 with an explicit offset"
    text = value[:-1] + "+00:00" if value[-1] in "Zz" else value
    try:
        return datetime.fromisoformat(text.replace("t", "T")), ""
    except ValueError as exc:
        return None, f"{short(value)} does not parse ({exc})"


def user_problems(label: str, body, uid: int, *, skip: tuple[str, ...] = ()) -> list[str]:
    """Differences between a JSON user object and the contract's row for `uid`."""
    if not isinstance(body, dict):
        return [f"{label}: body is not a JSON object: {short(body)}"]
    problems = []
    keys = set(body)
    if keys != set(USER_KEYS):
        missing, extra = set(USER_KEYS) - keys, keys - set(USER_KEYS)
        problems.append(f"{label}: keys differ (missing {sorted(missing)}, extra {sorted(extra)})")
    expected = expected_user(uid)
    for key in USER_KEYS:
        if key in skip or key not in body:
            continue
        got, want = body[key], getattr(expected, key)
        if key in ("created_at", "updated_at"):
            stamp, err = parse_stamp(got)
            if err:
                problems.append(f"{label}: {key} {err}")
            elif stamp != want:
                problems.append(f"{label}: {key} {got!r} != expected {want.isoformat()!r}")
            continue
        right_type = {"user_id": type(got) is int, "is_archived": type(got) is bool,
                      "username": isinstance(got, str),
                      "email": got is None or isinstance(got, str)}[key]
        if not right_type:
            problems.append(f"{label}: {key} has type {type(got).__name__} ({short(got)})")
        elif got != want:
            problems.append(f"{label}: {key} {short(got)} != expected {short(want)}")
    return problems


# -------------------------------------------------------------------- the checks

def check_ping(c: Client, server_id: str, database: str, orm: bool) -> list[Check]:
    resp, err = c.request("GET", "/ping/", token=None)
    problems = [status_problem("GET /ping/", resp, err, (200,))]
    if resp is not None and resp.status_code == 200:
        body = json_of(resp)
        want = {"server": server_id, "database": database, "orm": orm}
        if not isinstance(body, dict):
            problems.append(f"GET /ping/: body {short(resp.content)} is not a JSON object")
        else:
            for key, value in want.items():
                if body.get(key) != value or type(body.get(key)) is not type(value):
                    problems.append(f"GET /ping/: {key} {short(body.get(key))} != expected {value!r}")
    return [make_check("ping", problems)]


def check_get_users(c: Client, rng: random.Random) -> list[Check]:
    ids = list(FIXED_IDS) + rng.sample(range(2, ROW_COUNT), RANDOM_IDS)
    checks = []
    for uid in ids:
        label = f"GET /user/{uid}/"
        resp, err = c.request("GET", f"/user/{uid}/")
        problems = [status_problem(label, resp, err, (200,))]
        if resp is not None and resp.status_code == 200:
            if media_type(resp) != "application/json":
                problems.append(f"{label}: Content-Type {resp.headers.get('Content-Type')!r}, "
                                "expected application/json")
            problems += user_problems(label, json_of(resp), uid)
        checks.append(make_check(f"get user {uid}", problems))
    return checks


def check_update(c: Client, ep: Endpoint, rng: random.Random) -> list[Check]:
    """PATCH changes the row: in the answer, in a later GET and in the database itself."""
    uid = rng.randrange(2, ROW_COUNT)
    label = f"PATCH /user/{uid}/"
    before = expected_user(uid)
    new = {"username": f"verify_{secrets.token_hex(5)}", "email": f"{secrets.token_hex(5)}@verify.example"}
    resp, err = c.request("PATCH", f"/user/{uid}/", json_body=new)
    answer = [status_problem(label, resp, err, (200,))]
    answered_at = None
    if resp is not None and resp.status_code == 200:
        body = json_of(resp)
        answer += user_problems(label, body, uid, skip=("username", "email", "updated_at"))
        if isinstance(body, dict):
            for key in ("username", "email"):
                if body.get(key) != new[key]:
                    answer.append(f"{label}: answered {key} {short(body.get(key))}, sent {new[key]!r}")
            answered_at, stamp_err = parse_stamp(body.get("updated_at"))
            if stamp_err:
                answer.append(f"{label}: updated_at {stamp_err}")
            elif answered_at <= before.updated_at:
                answer.append(f"{label}: updated_at {body['updated_at']} not later than before "
                              f"({before.updated_at.isoformat()})")
    got, err = c.request("GET", f"/user/{uid}/")
    if got is not None and got.status_code == 200 and isinstance(json_of(got), dict):
        if {k: json_of(got).get(k) for k in new} != new:
            answer.append(f"GET /user/{uid}/ after PATCH: still answers "
                          f"{short(json_of(got).get('username'))}, not the new username")
    stored = stored_problems(ep, uid, new, before.updated_at, answered_at)
    db.restore(ep)
    return [make_check("update user answer", answer, f"user {uid}"),
            make_check("update user stored", stored, f"user {uid}, read back from {ep.engine}")]


def stored_problems(ep: Endpoint, uid: int, new: dict, old_stamp: datetime,
                    answered_at: datetime | None) -> list[str]:
    rows = db.fetch_users(ep, "user_id = %s", (uid,))
    if len(rows) != 1:
        return [f"user {uid}: {len(rows)} rows in the database after PATCH"]
    row, problems = rows[0], []
    for key in ("username", "email"):
        if getattr(row, key) != new[key]:
            problems.append(f"database row {uid}: {key} {short(getattr(row, key))} != sent {new[key]!r}")
    if row.updated_at <= old_stamp:
        problems.append(f"database row {uid}: updated_at {row.updated_at.isoformat()} did not move forward")
    if answered_at is not None and abs(answered_at - row.updated_at) >= timedelta(seconds=1):
        problems.append(f"database row {uid}: updated_at {row.updated_at.isoformat()} differs from "
                        f"the answered {answered_at.isoformat()} (must answer the row as stored)")
    return problems


def token_targets(database: str) -> list[tuple[str, str, dict | None]]:
    targets = [("GET", "/plain/?param1=a&param2=b&param3=c", None),
               ("GET", "/to_json/?param1=a&param2=b&param3=c", None)]
    if database != "none":
        targets = [("GET", "/user/1/", None),
                   ("PATCH", "/user/1/", {"username": "token_check", "email": "t@verify.example"})] + targets
    return targets


def check_tokens(c: Client, database: str) -> list[Check]:
    checks = []
    for name, token in (("token missing", None), ("token wrong", c.token + "_wrong")):
        problems = []
        for method, path, body in token_targets(database):
            # a PATCH body the server may leave unread: see Client.request
            resp, err = c.request(method, path, token=token, json_body=body,
                                  connection_of_its_own=body is not None)
            label = f"{method} {path.split('?')[0]} with {'no' if token is None else 'a wrong'} token"
            problem = status_problem(label, resp, err, (401,))
            problems.append(problem or error_body_problem(label, resp))
        checks.append(make_check(name, problems, "401 on every endpoint but /ping/"))
    return checks


def check_missing_users(c: Client) -> list[Check]:
    problems = []
    for uid in MISSING_IDS:
        label = f"GET /user/{uid}/"
        resp, err = c.request("GET", f"/user/{uid}/")
        problems.append(status_problem(label, resp, err, (404,)) or error_body_problem(label, resp))
    label = f"PATCH /user/{ROW_COUNT + 1}/"
    # a 404 may come before the body is read (the contract orders no checks): see
    # Client.request
    resp, err = c.request("PATCH", f"/user/{ROW_COUNT + 1}/",
                          json_body={"username": "nobody", "email": "n@verify.example"},
                          connection_of_its_own=True)
    patch = status_problem(label, resp, err, (404,)) or error_body_problem(label, resp)
    return [make_check("missing user", problems, "404 for " + ", ".join(MISSING_IDS)),
            make_check("update missing user", [patch], "404")]


MALFORMED_BODIES: list[tuple[str, str]] = [
    ("not JSON", "not json"),
    ("empty body", ""),
    ("a JSON array", "[]"),
    ("an empty object", "{}"),
    ("no email", json.dumps({"username": "x"})),
    ("no username", json.dumps({"email": "x@verify.example"})),
    ("username a number", json.dumps({"username": 1, "email": "x@verify.example"})),
    ("email a number", json.dumps({"username": "x", "email": 2})),
    ("username null", json.dumps({"username": None, "email": "x@verify.example"})),
    ("email null", json.dumps({"username": "x", "email": None})),
    ("username a list", json.dumps({"username": ["x"], "email": "x@verify.example"})),
    ("empty username", json.dumps({"username": "", "email": "x@verify.example"})),
    ("300-char username", json.dumps({"username": "u" * 300, "email": "x@verify.example"})),
]


def check_malformed_patch(c: Client) -> list[Check]:
    problems = []
    for what, body in MALFORMED_BODIES:
        label = f"PATCH /user/1/ with {what}"
        resp, err = c.request("PATCH", "/user/1/", data=body.encode())
        problems.append(status_problem(label, resp, err, (400, 422)) or error_body_problem(label, resp))
    return [make_check("malformed update body", problems,
                       f"400/422 with a JSON error for {len(MALFORMED_BODIES)} bodies")]


# (query string, expected param1..3, check name, severity)
QUERY_CASES = [
    ("param1=a&param2=b&param3=c", ("a", "b", "c"), "", "error"),
    ("param1=a%20b&param2=%C3%A9t%C3%A9&param3=%26%3D%2C", ("a b", "été", "&=,"), " decoding", "error"),
    ("param1=a&param3=c", ("a", None, "c"), " missing param", "error"),
    ("param1=x+y&param2=b&param3=c", ("x y", "b", "c"), " plus as space", "warning"),
]


def check_plain(c: Client) -> list[Check]:
    checks = []
    for query, values, suffix, severity in QUERY_CASES:
        label = f"GET /plain/?{query}"
        want = ", ".join(f"param{i}={v or ''}" for i, v in enumerate(values, 1))
        resp, err = c.request("GET", f"/plain/?{query}")
        problems = [status_problem(label, resp, err, (200,))]
        if resp is not None and resp.status_code == 200:
            if media_type(resp) != "text/plain":
                problems.append(f"{label}: Content-Type {resp.headers.get('Content-Type')!r}, expected text/plain")
            body = resp.content.decode("utf-8", "replace")
            if body != want:
                problems.append(f"{label}: body {short(body, 80)} != expected {want!r}")
        checks.append(make_check("plain" + suffix, problems, severity=severity))
    return checks


def check_to_json(c: Client) -> list[Check]:
    checks = []
    for query, values, suffix, severity in QUERY_CASES:
        label = f"GET /to_json/?{query}"
        want = {f"param{i}": v for i, v in enumerate(values, 1)}
        resp, err = c.request("GET", f"/to_json/?{query}")
        problems = [status_problem(label, resp, err, (200,))]
        if resp is not None and resp.status_code == 200:
            if media_type(resp) != "application/json":
                problems.append(f"{label}: Content-Type {resp.headers.get('Content-Type')!r}, "
                                "expected application/json")
            body = json_of(resp)
            if body != want:
                problems.append(f"{label}: body {short(body, 80)} != expected {want!r}")
        checks.append(make_check("to_json" + suffix, problems, severity=severity))
    return checks


def check_no_database(c: Client) -> list[Check]:
    problems = []
    for method, body in (("GET", None), ("PATCH", {"username": "x", "email": "x@verify.example"})):
        label = f"{method} /user/1/ without a database"
        # a 404 before the PATCH body is read: the body may stay unread (Client.request)
        resp, err = c.request(method, "/user/1/", json_body=body,
                              connection_of_its_own=body is not None)
        problems.append(status_problem(label, resp, err, (404,)) or error_body_problem(label, resp))
    return [make_check("user endpoints without database", problems, "404")]


# ------------------------------------------------------------------- entry point

def verify_server(base_url: str, *, server_id: str, database: str, orm: bool, token: str,
                  endpoint: Endpoint | None, burst: int = 50, timeout: float = 5.0) -> Report:
    """Run every check against the server at `base_url`; the database is restored after
    anything that may have written to it."""
    if (database == "none") != (endpoint is None):
        raise ValueError(f"database={database!r} needs {'no' if database == 'none' else 'an'} endpoint")
    report = Report(server_id, database, orm)
    client, rng = Client(base_url, token, timeout), random.Random()
    groups: list[tuple[str, Callable[[], list[Check]]]] = [
        ("ping", lambda: check_ping(client, server_id, database, orm))]
    if endpoint is not None:
        groups += [("get user", lambda: check_get_users(client, rng))]
    groups += [("token", lambda: check_tokens(client, database))]
    if endpoint is None:
        groups += [("user endpoints without database", lambda: check_no_database(client))]
    else:
        groups += [("missing user", lambda: check_missing_users(client)),
                   ("malformed update body", lambda: check_malformed_patch(client))]
    groups += [("plain", lambda: check_plain(client)), ("to_json", lambda: check_to_json(client))]
    if endpoint is not None:
        groups += [("update user", lambda: check_update(client, endpoint, rng)),
                   ("queries", lambda: check_query_counts(client, endpoint, orm, burst, rng, report))]
    try:
        for name, fn in groups:
            report.checks += guarded(name, fn)
    finally:
        client.close()
        if endpoint is not None:
            # negative cases a broken server accepted (a PATCH without token, a junk body) wrote
            report.checks += guarded("restore", lambda: (db.restore(endpoint), [])[1])
    return report
