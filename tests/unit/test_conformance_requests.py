"""The conformance checks' pure parts: the exact bytes of the odd requests, and how an
answer's framing and list-valued fields are read (the checks themselves run against
real servers in tests/integration/test_conformance.py)."""
from __future__ import annotations

from bench.verify.conformance import Target, framing
from bench.verify.rawhttp import Answer


def answer(*headers: tuple[str, str]) -> Answer:
    return Answer(200, "HTTP/1.1", list(headers), b"", 0.0)


def test_the_odd_requests_are_exactly_the_bytes_meant():
    target = Target("http://127.0.0.1:18080", "tok")
    assert target.request("x") == (b"GET /plain/?param1=x&param2=b&param3=c HTTP/1.1\r\n"
                                   b"Host: 127.0.0.1:18080\r\ntoken: tok\r\n\r\n")
    bare = target.request("x", eol="\n", version="HTTP/1.0", extra=("Connection: keep-alive",))
    assert b"\r" not in bare and bare.startswith(b"GET /plain/?param1=x&param2=b&param3=c HTTP/1.0\n")
    assert bare.endswith(b"Connection: keep-alive\n\n")
    assert target.request("x", body="0\r\n\r\n").endswith(b"\r\n\r\n0\r\n\r\n")


def test_framing_names_what_the_answer_declared():
    assert framing(answer(("content-length", "34"))) == "Content-Length 34"
    assert framing(answer(("transfer-encoding", "gzip, Chunked"))) == "chunked"
    assert framing(answer()) == "close-delimited"
    assert framing(answer(("content-length", "3"), ("transfer-encoding", "chunked"))) \
        .startswith("fail: both")


def test_list_valued_fields_are_read_token_by_token_over_every_line():
    a = answer(("connection", "keep-alive"), ("connection", " Close "))
    assert a.header("connection") == "keep-alive,  Close "
    assert a.has_token("connection", "close") and a.has_token("connection", "keep-alive")
    assert not a.has_token("connection", "upgrade") and a.header("date") is None
