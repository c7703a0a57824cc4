"""The parts of the HTTP contract every framework shares: token, user id, PATCH body,
the /plain/ and /to_json/ bodies and the user object; the database suite's n, its
random ids and usernames and the fortunes list.  No I/O, so each
framework's app file only maps its request/response objects onto these.
"""
from __future__ import annotations

import json
import random
from datetime import datetime, timezone
from typing import Any, Iterable, NamedTuple

from .settings import Settings

MAX_TEXT = 256          # varchar(256) on both engines; Python len() counts code points,
                        # which is what both engines count for varchar / utf8mb4.
MAX_USER_ID = 2_147_483_647   # int4 / INT

# Error bodies (the contract: JSON {"error": "<short reason>"}).
ERR_TOKEN = {"error": "invalid token"}
ERR_NOT_FOUND = {"error": "not found"}
ERR_NO_DB = {"error": "no database"}

_UTC = timezone.utc


def token_ok(value: str | None, settings: Settings) -> bool:
    """Header `token` must equal BENCH_TOKEN (checked first on every route but /ping/)."""
    return value is not None and value == settings.token


def ping_body(settings: Settings) -> dict[str, Any]:
    return {"server": settings.server_id, "database": settings.db, "orm": settings.orm}


def parse_user_id(raw: str | None) -> int | None:
    """Path id: ASCII digits only, 1..2147483647; anything else is None (-> 404)."""
    if not raw or len(raw) > 10 or not raw.isascii() or not raw.isdigit():
        return None
    value = int(raw)
    if value < 1 or value > MAX_USER_ID:
        return None
    return value


class InvalidBody(ValueError):
    """The PATCH body breaks the contract; str(exc) is the short reason (-> 400)."""


def text_problem(value: Any, *, allow_empty: bool) -> str | None:
    """Why `value` cannot be stored in a varchar(256) column, or None if it can.

    Checked here so the database never rejects a value (that would be a 5xx): a NUL
    is refused by PostgreSQL, a lone surrogate (JSON "\\ud800") cannot be encoded to
    UTF-8 by any driver, and an over-long value breaks varchar(256)."""
    if not isinstance(value, str):
        return "must be a string"
    if not value and not allow_empty:
        return "must not be empty"
    if len(value) > MAX_TEXT:
        return f"longer than {MAX_TEXT} characters"
    if "\x00" in value:
        return "contains a NUL character"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "is not valid Unicode text"
    return None


def parse_patch_body(raw: bytes | str) -> tuple[str, str]:
    """PATCH /user/{id}/ body -> (username, email), or raise InvalidBody.

    A JSON object with "username" (non-empty string) and "email" (string), both at
    most 256 characters; extra keys are ignored."""
    try:
        data = json.loads(raw)
    except Exception:  # noqa: BLE001 - bad UTF-8, bad JSON, too deep (RecursionError)...
        raise InvalidBody("body is not valid JSON") from None
    if not isinstance(data, dict):
        raise InvalidBody("body must be a JSON object")
    if "username" not in data or "email" not in data:
        raise InvalidBody("username and email are required")
    username, email = data["username"], data["email"]
    problem = text_problem(username, allow_empty=False)
    if problem:
        raise InvalidBody(f"username {problem}")
    problem = text_problem(email, allow_empty=True)
    if problem:
        raise InvalidBody(f"email {problem}")
    return username, email


def plain_body(p1: str | None, p2: str | None, p3: str | None) -> str:
    """/plain/: `param1=a, param2=b, param3=c`, a missing value is empty."""
    return f"param1={p1 or ''}, param2={p2 or ''}, param3={p3 or ''}"


def to_json_body(p1: str | None, p2: str | None, p3: str | None) -> dict[str, str | None]:
    """/to_json/: a missing value is null."""
    return {"param1": p1, "param2": p2, "param3": p3}


def rfc3339(value: datetime) -> str:
    """RFC 3339 with an explicit offset. MySQL DATETIME comes back naive and holds UTC:
    attach UTC, never shift. timestamptz comes back aware (asyncpg: UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=_UTC)
    return value.isoformat()


def user_dict(user_id: int, username: str, email: str | None, created_at: datetime,
              updated_at: datetime, is_archived: Any) -> dict[str, Any]:
    """The contract's user object (exactly these six keys)."""
    return {
        "user_id": user_id,
        "username": username,
        "email": email,
        "created_at": rfc3339(created_at),
        "updated_at": rfc3339(updated_at),
        "is_archived": bool(is_archived),   # MySQL BOOLEAN is TINYINT(1): 0/1
    }


# --- the database suite (CONTRACT.md section 6) -------------------------------------

N_MAX = 500             # /queries/, /updates/, /cached/: n is clamped to 1..500
ROW_COUNT = 10_000      # users 1..10000: the ids the server draws from
_rng = random.Random()  # seeded from the OS per process (each worker its own sequence)


def parse_n(raw: str | None) -> int:
    """Query parameter n: ASCII digits only -> min(value, 500), 0 -> 1; anything else
    (missing, empty, "abc", "-3", "1.5") -> 1. Never an error: a digit string of any
    length is read without int() (which refuses more than 4300 digits)."""
    if not raw or not raw.isascii() or not raw.isdigit():
        return 1
    digits = raw.lstrip("0")
    if len(digits) > 3:
        return N_MAX
    return max(1, min(int(digits or "0"), N_MAX))


def random_ids(n: int) -> list[int]:
    """/queries/ and /cached/: n ids uniform in 1..10000, repeats allowed."""
    return [_rng.randint(1, ROW_COUNT) for _ in range(n)]


def distinct_random_ids(n: int) -> list[int]:
    """/updates/: n distinct ids (sorted: the UPDATEs go in ascending id order, so two
    concurrent requests never lock the same rows in opposite orders)."""
    return sorted(_rng.sample(range(1, ROW_COUNT + 1), n))


def random_username() -> str:
    """/updates/: "u" + a random integer 1..1000000."""
    return f"u{_rng.randint(1, 1_000_000)}"


def utc_now() -> datetime:
    """/updates/' updated_at, taken in the server (microseconds, what both engines store)."""
    return datetime.now(_UTC)


class Fortune(NamedTuple):
    id: int
    message: str


EXTRA_FORTUNE = Fortune(0, "A fortune added at request time.")


def with_extra_fortune(rows: Iterable[tuple[int, str]]) -> list[Fortune]:
    """/fortunes/: the table's rows plus the one added in memory, sorted by message in
    code-point order (Python compares str by code point)."""
    fortunes = [Fortune(fid, message) for fid, message in rows]
    fortunes.append(EXTRA_FORTUNE)
    fortunes.sort(key=lambda f: f.message)
    return fortunes
