"""What the sync and the async views share: token check, input parsing, JSON bodies."""
import json
import random

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse, JsonResponse

from benchcommon.workloads import (DELAY_BODY, ERR_TOO_LARGE, READ_CHUNK, Upload,
                                   declared_too_large)

TOKEN = settings.BENCH_TOKEN
HAS_DB = settings.BENCH_DB != "none"
PING_BODY = {"server": settings.BENCH_SERVER_ID, "database": settings.BENCH_DB,
             "orm": settings.BENCH_ORM}

MAX_ID = 2**31 - 1      # `integer` / INT: a larger id can name no row
MAX_TEXT = 256          # varchar(256)
PARAMS = ("param1", "param2", "param3")
DRAIN_LIMIT = 16 * 1024 * 1024   # an over-large body is read and dropped up to this much


def error(status: int, reason: str) -> JsonResponse:
    return JsonResponse({"error": reason}, status=status)


def token_ok(request) -> bool:
    return request.META.get("HTTP_TOKEN") == TOKEN


def unauthorized() -> JsonResponse:
    return error(401, "bad or missing token")


def no_database() -> JsonResponse:
    return error(404, "no database")


def user_not_found() -> JsonResponse:
    return error(404, "user not found")


def method_not_allowed(allow: str = "GET, PATCH") -> JsonResponse:
    """Django routes by path only, so every view checks the method itself: without it
    /ping/, /plain/ and /to_json/ answered 200 to POST, DELETE, TRACE... where every
    other server answers 405 (found by tests/integration/test_fuzz.py)."""
    response = error(405, "method not allowed")
    response["Allow"] = allow
    return response


def parse_id(raw: str) -> int | None:
    """The id in /user/{id}/, or None when it cannot name a row (404 without a query)."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 10:
        return None
    user_id = int(raw)
    return user_id if 1 <= user_id <= MAX_ID else None


def check_user_request(request, user_id: str) -> tuple[int | None, JsonResponse | None]:
    """(primary key, None) for a user request the views may serve, else (None, the error
    response): the same order of checks as every server (token, method, database, id)."""
    if not token_ok(request):
        return None, unauthorized()
    if request.method not in ("GET", "PATCH"):
        return None, method_not_allowed()
    if not HAS_DB:
        return None, no_database()
    pk = parse_id(user_id)
    return (pk, None) if pk is not None else (None, user_not_found())


def _text_problem(name: str, value) -> str | None:
    if not isinstance(value, str):
        return f"{name} must be a string"
    if len(value) > MAX_TEXT:
        return f"{name} is longer than {MAX_TEXT} characters"
    if "\x00" in value:
        return f"{name} contains a NUL character"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates from "\ud800" escapes
        return f"{name} is not valid Unicode"
    return None


def _drain(request) -> None:
    """Read and drop the rest of a body, up to DRAIN_LIMIT: gunicorn answers with
    keep-alive but drains at most 64 KiB of an unread body itself and otherwise closes the
    connection, so the client's next request on it got no answer at all (found by
    tests/integration/test_fuzz.py)."""
    drained = 0
    while drained < DRAIN_LIMIT and (chunk := request.read(READ_CHUNK)):
        drained += len(chunk)


def read_body(request) -> tuple[bytes | None, JsonResponse | None]:
    """(the PATCH body, None), or (None, a 400) for one over DATA_UPLOAD_MAX_MEMORY_SIZE
    (Django's 2.5 MB), which Django refuses before reading it; such a body is read and
    dropped (_drain)."""
    try:
        return request.body, None
    except RequestDataTooBig:
        _drain(request)
        return None, error(400, "body too large")


def parse_update(body: bytes) -> tuple[dict | None, JsonResponse | None]:
    """(fields, None) for a valid PATCH body, else (None, 400/422 response)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return None, error(400, "body is not valid JSON")
    if not isinstance(data, dict):
        return None, error(422, "body must be a JSON object")
    username, email = data.get("username"), data.get("email")
    problem = _text_problem("username", username) or _text_problem("email", email)
    if problem is None and not username:
        problem = "username must not be empty"
    if problem:
        return None, error(422, problem)
    return {"username": username, "email": email}, None


def user_dict(user) -> dict:
    # isoformat() keeps the stored microseconds and the +00:00 offset (the ORM returns aware
    # UTC datetimes on both engines); DjangoJSONEncoder would cut them to milliseconds.
    return {
        "user_id": user.user_id,
        "username": user.username,
        "email": user.email,
        "created_at": user.created_at.isoformat(),
        "updated_at": user.updated_at.isoformat(),
        "is_archived": user.is_archived,
    }


def user_response(user) -> JsonResponse:
    return JsonResponse(user_dict(user))


# ---- the database suite (CONTRACT.md, section 6) ----------------------------------------

SUITE_MAX_N = 500
SUITE_ID_COUNT = 10_000          # ids 1..10000 exist in `users`
ADDED_FORTUNE = (0, "A fortune added at request time.")


def parse_n(request) -> int:
    """The suite's `n`: ASCII digits only -> min(value, 500), 0 -> 1; anything else
    (missing, empty, "abc", "-3", "1.5") -> 1. Never an error; a long digit string is 500
    without ever being converted (int() refuses strings over 4300 digits)."""
    raw = request.GET.get("n", "")
    if not (raw.isascii() and raw.isdigit()):
        return 1
    digits = raw.lstrip("0")
    if len(digits) > 3:
        return SUITE_MAX_N
    return max(1, min(int(digits or "0"), SUITE_MAX_N))


def check_suite_request(request) -> JsonResponse | None:
    """None when a suite request may be served, else the error response: the same order of
    checks as /user/{id}/ (token, method, database)."""
    if not token_ok(request):
        return unauthorized()
    if request.method != "GET":
        return method_not_allowed("GET")
    if not HAS_DB:
        return no_database()
    return None


def random_ids(n: int) -> list[int]:
    """n ids drawn uniformly from 1..10000, repeats allowed (/queries/, /cached/)."""
    return [random.randint(1, SUITE_ID_COUNT) for _ in range(n)]


def distinct_random_ids(n: int) -> list[int]:
    """n distinct ids from 1..10000 (/updates/)."""
    return random.sample(range(1, SUITE_ID_COUNT + 1), n)


def random_username() -> str:
    return f"u{random.randint(1, 1_000_000)}"


def users_response(users) -> JsonResponse:
    return JsonResponse([user_dict(user) for user in users], safe=False)


def cache_key(user_id: int) -> str:
    return f"user:{user_id}"


def plain_response(request) -> HttpResponse:
    get = request.GET.get
    body = ", ".join(f"{name}={get(name, '')}" for name in PARAMS)
    return HttpResponse(body, content_type="text/plain; charset=utf-8")


def to_json_response(request) -> JsonResponse:
    get = request.GET.get
    return JsonResponse({name: get(name) for name in PARAMS})


# ---- the HTTP workloads (servers/README.md): /upload/ and /delay/ ------------------------
# /static/ is the static-file middleware's (settings.MIDDLEWARE), ahead of the URLconf.

def check_workload_request(request, method: str) -> JsonResponse | None:
    """None when an /upload/ or /delay/ request may be served, else the error response,
    in the order of every other view (token, then method)."""
    if not token_ok(request):
        return unauthorized()
    if request.method != method:
        return method_not_allowed(method)
    return None


def upload_response(request) -> JsonResponse:
    """The body read in READ_CHUNK pieces through the CRC (request.read, never
    request.body, which DATA_UPLOAD_MAX_MEMORY_SIZE would refuse over 2.5 MB), never held
    whole here. Over the limit: 413, the rest of the body drained first (_drain) so that
    the keep-alive connection survives; a declared length over DRAIN_LIMIT is answered
    at once (gunicorn then closes the connection)."""
    if declared_too_large(request.META.get("CONTENT_LENGTH")):
        if int(request.META["CONTENT_LENGTH"]) <= DRAIN_LIMIT:
            _drain(request)
        return JsonResponse(ERR_TOO_LARGE, status=413)
    body = Upload()
    while chunk := request.read(READ_CHUNK):
        if not body.add(chunk):
            _drain(request)
            return JsonResponse(ERR_TOO_LARGE, status=413)
    return JsonResponse(body.answer())


def delay_response() -> HttpResponse:
    return HttpResponse(DELAY_BODY, content_type="text/plain; charset=utf-8")
