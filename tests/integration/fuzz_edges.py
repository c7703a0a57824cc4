"""Hand-written requests that schemathesis does not generate, because they are not JSON
values or not what an OpenAPI parameter can describe: raw bytes bodies (invalid UTF-8,
lone surrogate escapes, numbers past float range, nesting deeper than any parser's
stack, a body of megabytes, trailing bytes), ids that a lax parser reads as numbers
(Unicode digits, a sign, blanks, hex, an encoded slash), undecodable query escapes, and
the database suite's n in every form its clamping has to survive (empty, signs, blanks,
points, exponents, Unicode digits, leading zeros, values that wrap around in 32 or 64
bits, a thousand digits, several n, escapes). The contract's answer for each is known
(for n: how many rows); the responses are held to the OpenAPI document like the
generated ones (tests/integration/fuzzing.py sends them; those without a body go out
byte for byte).
"""
from __future__ import annotations

from dataclasses import dataclass

BAD_BODY = frozenset({400, 422})
TARGET_ID = 42                    # an existing user


@dataclass(frozen=True)
class Edge:
    what: str
    method: str
    path: str                     # the operation's path template, e.g. /user/{id}/
    url_path: str                 # the path as sent (already percent-encoded)
    statuses: frozenset[int]      # what the contract allows, with a database
    body: bytes | None = None
    query: str = ""               # raw query string, sent as written
    # a body the server may read as valid (it may also refuse it): the values it
    # must then store and answer
    fields: tuple[str, str] | None = None
    # the database suite: how many rows the answer may have (n clamped to 1..500); a
    # form the contract calls neither a number nor not one allows 1 and its value
    rows: frozenset[int] | None = None


def _patch(what: str, body: bytes, statuses=BAD_BODY, fields=None) -> Edge:
    return Edge(what, "PATCH", "/user/{id}/", f"/user/{TARGET_ID}/", frozenset(statuses), body,
                fields=fields)


def _get_id(what: str, raw_id: str) -> Edge:
    return Edge(what, "GET", "/user/{id}/", f"/user/{raw_id}/", frozenset({404}))


DEEP = 100_000
BODIES = [
    _patch("invalid UTF-8 in a string", b'{"username": "\xff\xfe", "email": "e@x"}'),
    _patch("lone high surrogate escape", b'{"username": "\\ud800", "email": "e@x"}'),
    _patch("lone low surrogate escape", b'{"username": "u", "email": "x\\udc00"}'),
    _patch("NUL escape in username", b'{"username": "a\\u0000b", "email": "e@x"}'),
    _patch("number past float range", b'{"username": "u", "email": 1e99999}'),
    _patch("trailing bytes after the object", b'{"username": "u", "email": "e@x"} x'),
    _patch("two JSON values", b'{"username": "u", "email": "e@x"}{"a": 1}'),
    _patch(f"arrays nested {DEEP} deep", b"[" * DEEP + b"]" * DEEP),
    # valid if the parser copes with the depth of an ignored key; refused if it does not
    _patch(f"ignored key nested {DEEP} deep",
           b'{"username": "deep", "email": "deep@x", "x": ' + b"[" * DEEP + b"]" * DEEP + b"}",
           statuses=BAD_BODY | {200}, fields=("deep", "deep@x")),
    _patch("3 MB username", b'{"username": "' + b"u" * 3_000_000 + b'", "email": "e@x"}'),
    # RFC 8259: no BOM, but a parser MAY ignore one; either answer is the contract's
    _patch("UTF-8 byte order mark", b'\xef\xbb\xbf{"username": "bom", "email": "bom@x"}',
           statuses=BAD_BODY | {200}, fields=("bom", "bom@x")),
]
IDS = [
    _get_id("Arabic-Indic digit one", "%D9%A1"),
    _get_id("fullwidth digit one", "%EF%BC%91"),
    _get_id("plus sign", "%2B1"),
    _get_id("minus zero", "-0"),
    _get_id("leading blank", "%201"),
    _get_id("trailing blank", "1%20"),
    _get_id("hexadecimal", "0x1"),
    _get_id("exponent", "1e3"),
    _get_id("encoded slash", "1%2F"),
    _get_id("NUL", "1%00"),
    _get_id("2**32 + 1 (wraps to 1 in 32 bits)", "4294967297"),
    _get_id("2**64 + 1 (wraps to 1 in 64 bits)", "18446744073709551617"),
    # long, but within every HTTP server's request-line limit (gunicorn's is 4094 bytes)
    _get_id("1,000 digits", "1" * 1_000),
]
# RFC 3986 makes a "%" not followed by two hex digits a malformed URI: a server may
# refuse the request (400, a JSON error: Vert.x's router does) or read it as it can
MALFORMED = frozenset({200, 400})
QUERIES = [
    Edge(f"{path} with an undecodable escape", "GET", path, path, MALFORMED,
         query="param1=%ZZ&param2=%&param3=%F")
    for path in ("/plain/", "/to_json/")
] + [
    Edge(f"{path} with an escape that is not UTF-8", "GET", path, path, frozenset({200}),
         query="param1=%FF%FE&param2=b&param3=c")
    for path in ("/plain/", "/to_json/")
]

# The suite's n: (what, raw query, rows allowed). Missing, empty, not a number or below
# 1 is 1; above 500 is 500; ASCII digits are the number (leading zeros included). A
# sign, blanks, a non-ASCII digit, an exponent or a point with an integral value: the
# contract does not say whether that is a number, so its value is allowed as well as 1.
N_FORMS = [
    ("n missing", "", {1}),
    ("n empty", "n=", {1}),
    ("n without '='", "n", {1}),
    ("n=0", "n=0", {1}),
    ("n=-0", "n=-0", {1}),
    ("n=-3", "n=-3", {1}),
    ("n=-501", "n=-501", {1}),
    ("n=1.5", "n=1.5", {1}),
    ("n=5.0", "n=5.0", {1, 5}),
    ("n=1e2", "n=1e2", {1, 100}),
    ("n=abc", "n=abc", {1}),
    ("digits then letters", "n=7abc", {1}),
    ("NaN", "n=NaN", {1}),
    ("Infinity", "n=Infinity", {1, 500}),
    ("hexadecimal", "n=0x10", {1, 16}),
    ("encoded plus sign", "n=%2B5", {1, 5}),
    ("'+' (a blank in a query) before the digits", "n=+5", {1, 5}),
    ("trailing blank", "n=5%20", {1, 5}),
    ("fullwidth digit five", "n=%EF%BC%95", {1, 5}),
    ("Arabic-Indic digit three", "n=%D9%A3", {1, 3}),
    ("NUL", "n=%00", {1}),
    ("NUL after a digit", "n=5%00", {1}),
    ("undecodable escape", "n=%ZZ", {1}),
    ("escape that is not UTF-8", "n=%FF", {1}),
    ("n=%35 (an escaped 5)", "n=%35", {5}),
    ("leading zeros", "n=0020", {20}),
    ("twenty digits, leading zeros", "n=00000000000000000007", {7}),
    # (499 and 500 are schemathesis's coverage cases, 501 too but kept: the one edge of
    # the three that /updates/ and /cached/ also get)
    ("n=501", "n=501", {500}),
    ("2**31 (past a signed 32-bit int)", "n=2147483648", {500}),
    ("2**32 + 5 (wraps to 5 in 32 bits)", "n=4294967301", {500}),
    ("2**64 + 7 (wraps to 7 in 64 bits)", "n=18446744073709551623", {500}),
    ("-(2**64) + 3 (wraps to 3 in 64 bits)", "n=-18446744073709551613", {1}),
    # long, but within every HTTP server's request-line limit (gunicorn's is 4094 bytes)
    ("1,000 digits", "n=" + "9" * 1_000, {500}),
    ("n twice (which one counts is open)", "n=3&n=4", {3, 4}),
    ("n among other parameters", "x=9&n=6&y=%3Cscript%3E", {6}),
    # names are case-sensitive in a URI, but Vert.x reads its query parameters from a
    # case-insensitive map: N=5 is n=5 there; no request the harness sends says N
    ("N (a name in another case)", "N=5", {1, 5}),
    ("PHP-style array n[] (not n)", "n%5B%5D=5", {1}),
]
# Every form goes to /queries/. /updates/ (a write per row) and /cached/ (cold: a read
# per row) get the forms that tell one parser from another, and only two that must
# answer 500 rows (each is 500 statements, or 1,000 for /updates/).
FEWER_FORMS = ("n missing", "n empty", "n=0", "n=-3", "n=1.5", "n=abc", "leading zeros",
               "n=%35 (an escaped 5)", "undecodable escape", "n=501",
               "2**32 + 5 (wraps to 5 in 32 bits)", "n twice (which one counts is open)")


def _suite_get(path: str, what: str, query: str, rows) -> Edge:
    return Edge(what, "GET", path, path,
                MALFORMED if "undecodable escape" in what else frozenset({200}), query=query,
                rows=None if rows is None else frozenset(rows))


SUITE = [_suite_get("/queries/", what, query, rows) for what, query, rows in N_FORMS] + \
    [_suite_get(path, what, query, rows) for path in ("/updates/", "/cached/")
     for what, query, rows in N_FORMS if what in FEWER_FORMS] + \
    [_suite_get("/fortunes/", "parameters are ignored", "n=5&id=0&message=%3Cscript%3E", None),
     _suite_get("/fortunes/", "an undecodable escape", "x=%ZZ", None)]
EDGES = BODIES + IDS + QUERIES + SUITE


def edges(path: str, method: str) -> tuple[Edge, ...]:
    return tuple(e for e in EDGES if (e.path, e.method) == (path, method))
