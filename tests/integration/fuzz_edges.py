"""Hand-written requests that schemathesis does not generate, because they are not JSON
values or not what an OpenAPI parameter can describe: raw bytes bodies (invalid UTF-8,
lone surrogate escapes, numbers past float range, nesting deeper than any parser's
stack, a body of megabytes, trailing bytes), ids that a lax parser reads as numbers
(Unicode digits, a sign, blanks, hex, an encoded slash) and undecodable query escapes.
The contract's answer for each is known; the responses are held to the OpenAPI
document like the generated ones (tests/integration/fuzzing.py sends them).
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
QUERIES = [
    Edge(f"{path} with an undecodable escape", "GET", path, path, frozenset({200}),
         query="param1=%ZZ&param2=%&param3=%F")
    for path in ("/plain/", "/to_json/")
] + [
    Edge(f"{path} with an escape that is not UTF-8", "GET", path, path, frozenset({200}),
         query="param1=%FF%FE&param2=b&param3=c")
    for path in ("/plain/", "/to_json/")
]
EDGES = BODIES + IDS + QUERIES


def edges(path: str, method: str) -> tuple[Edge, ...]:
    return tuple(e for e in EDGES if (e.path, e.method) == (path, method))
