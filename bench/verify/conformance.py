"""HTTP conformance, before any load: does the endpoint the load will hit (a server, or
the proxy in front of it) speak HTTP/1.1 as RFC 9110/9112 say, or does it cut the
corners that make a server look fast (a frozen Date, an ignored Connection: close, a
parser that accepts anything)?

Every check talks to the contract's cheap endpoint, GET /plain/ with the token, over raw
sockets (bench.verify.rawhttp), and gives one verdict (bench.core.conformance): pass,
fail or not applicable, with one line saying what was seen. Where the RFC lets a server
choose (a bare LF, obs-fold, a large header, HTTP/1.0 keep-alive), every allowed choice
passes; only what the RFC forbids fails. After each malformed request the server must
still answer on a new connection (it did not crash).

The verdicts are warnings, never a verification failure: a server that fails them is
still measured, and marked in the tables and the reports.
"""
from __future__ import annotations

import re
import time
from email.utils import parsedate_to_datetime
from typing import Callable
from urllib.parse import urlsplit

from bench.core.conformance import CHECKS, FAIL, NOT_APPLICABLE, PASS
from bench.verify.rawhttp import Answer, ClosedUnanswered, Connection, Garbled, \
    Unanswered, request_bytes

TIMEOUT_S = 5.0          # for an answer: generous, a check that runs out of it fails
CLOSE_WAIT_S = 2.0       # for the server to close a connection it must close
# for an answer to a malformed request, sent whole: a server that will answer it does so
# at once, and one that waits on (for a CRLF that never comes) would hold TIMEOUT_S
MALFORMED_WAIT_S = 2.0
DATE_WAIT_S = 3.0        # for Date to move on after the clock's second changed
SPLIT_PAUSE_S = 0.002    # between the split writes: each reaches the server on its own
BIG_HEADER = 64 * 1024
REJECTED = (400, 431, 501)
TOO_LARGE = (400, 413, 431)
IMF_FIXDATE = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|"
                         r"Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$")
PROBLEMS = (Unanswered, ClosedUnanswered, Garbled, OSError)


class Target:
    """The endpoint under check and the contract request it answers."""

    def __init__(self, base_url: str, token: str, timeout: float = TIMEOUT_S):
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.host_header = parts.netloc
        self.token, self.timeout = token, timeout

    def connect(self) -> Connection:
        return Connection(self.host, self.port, self.timeout)

    def request(self, tag: str, **kwargs) -> bytes:
        return request_bytes(f"/plain/?param1={tag}&param2=b&param3=c", self.host_header,
                             self.token, **kwargs)

    @staticmethod
    def body(tag: str) -> bytes:
        return f"param1={tag}, param2=b, param3=c".encode()


def verdict(result: str, detail: str) -> dict:
    return {"verdict": result, "detail": detail[:300]}


def problem(answer: Answer, tag: str) -> str:
    """'' when `answer` is the contract's 200 for the request tagged `tag`."""
    if answer.status != 200:
        return f"status {answer.status}"
    if answer.body != Target.body(tag):
        return f"body {answer.body[:60]!r}, expected {Target.body(tag)!r}"
    return ""


def plain(target: Target, tag: str, extra: tuple[str, ...] = ()) -> Answer:
    with target.connect() as conn:
        conn.send(target.request(tag, extra=extra))
        return conn.read_response()


# ------------------------------------------------------------------- the checks

def check_date(target: Target, first: Answer) -> dict:
    """Present, IMF-fixdate, near this machine's clock, and advancing: read again once the
    clock's second has passed the first Date's, for up to DATE_WAIT_S (a server may
    refresh a cached Date once a second)."""
    value = first.header("date")
    if value is None:
        return verdict(FAIL, "no Date header (an origin server with a clock MUST send one)")
    if not IMF_FIXDATE.match(value):
        return verdict(FAIL, f"Date {value!r} is not IMF-fixdate")
    start = parsedate_to_datetime(value).timestamp()
    offset = start - first.received_at      # the first answer may be seconds old by now
    if abs(offset) > 60:
        return verdict(FAIL, f"Date {value!r} is {offset:+.0f} s from this machine's clock")
    deadline = start + 1 + DATE_WAIT_S
    time.sleep(max(0.0, start + 1.05 - time.time()))
    with target.connect() as conn:
        while True:
            conn.send(target.request("date"))
            later = conn.read_response().header("date") or ""
            if IMF_FIXDATE.match(later) and parsedate_to_datetime(later).timestamp() > start:
                return verdict(PASS, f"{value!r}, then {later!r}")
            if time.time() >= deadline:
                return verdict(FAIL, f"Date stayed {value!r} for "
                                     f"{time.time() - start:.1f} s (frozen), last {later!r}")
            time.sleep(0.2)


def framing(answer: Answer) -> str:
    chunked = answer.has_token("transfer-encoding", "chunked")
    length = answer.header("content-length")
    if chunked and length is not None:
        return "fail: both Content-Length and Transfer-Encoding (a server MUST NOT send both)"
    if chunked:
        return "chunked"
    return f"Content-Length {length}" if length is not None else "close-delimited"


def check_length(target: Target) -> dict:
    """Two answers on one connection, each body exactly the expected bytes: a declared
    length too short leaves bytes that garble the second answer, one too long leaves the
    first unfinished."""
    seen = []
    with target.connect() as conn:
        for tag in ("length1", "length-two"):
            conn.send(target.request(tag))
            answer = conn.read_response()
            how = framing(answer)
            if how.startswith("fail") or problem(answer, tag):
                return verdict(FAIL, how if how.startswith("fail") else
                               f"{how}: {problem(answer, tag)}")
            seen.append(f"{how} ({len(answer.body)} bytes)" if how == "chunked" else how)
            if how == "close-delimited":
                break
    return verdict(PASS, f"{' and '.join(seen)}: each body as long as declared")


def check_close(target: Target) -> dict:
    with target.connect() as conn:
        conn.send(target.request("close", extra=("Connection: close",)))
        answer = conn.read_response()
        if problem(answer, "close"):
            return verdict(FAIL, problem(answer, "close"))
        said = "said" if answer.has_token("connection", "close") else "did not say"
        if conn.closed_within(CLOSE_WAIT_S):
            return verdict(PASS, f"closed after the response ({said} Connection: close)")
        return verdict(FAIL, f"connection still open {CLOSE_WAIT_S:g} s after answering a "
                             f"Connection: close request ({said} Connection: close)")


def check_keep_alive(target: Target) -> dict:
    with target.connect() as conn:
        for i in range(3):
            tag = f"keep{i}"
            conn.send(target.request(tag))
            try:
                answer = conn.read_response()
            except ClosedUnanswered:
                return verdict(FAIL, f"closed before answering request {i + 1} of 3")
            if problem(answer, tag):
                return verdict(FAIL, f"request {i + 1}: {problem(answer, tag)}")
            if answer.has_token("connection", "close") or answer.http_version == "HTTP/1.0":
                return verdict(FAIL, f"request {i + 1} answered {answer.http_version} with "
                                     f"Connection: {answer.header('connection')}: not kept open")
    return verdict(PASS, "3 requests answered on one connection")


def check_keep_alive_10(target: Target) -> dict:
    """HTTP/1.0 keep-alive is the server's choice; what the response says must hold."""
    extra = ("Connection: keep-alive",)
    with target.connect() as conn:
        conn.send(target.request("old1", version="HTTP/1.0", extra=extra))
        answer = conn.read_response()
        if problem(answer, "old1"):
            return verdict(FAIL, problem(answer, "old1"))
        if answer.has_token("transfer-encoding", "chunked"):
            return verdict(FAIL, "chunked answer to an HTTP/1.0 request")
        persists = not answer.has_token("connection", "close") and (
            answer.http_version != "HTTP/1.0" or answer.has_token("connection", "keep-alive"))
        said = f"{answer.http_version}, Connection: {answer.header('connection')}"
        if not persists:
            return verdict(NOT_APPLICABLE, f"declines HTTP/1.0 keep-alive ({said}), allowed")
        conn.send(target.request("old2", version="HTTP/1.0", extra=extra))
        try:
            again = conn.read_response()
        except ClosedUnanswered:
            return verdict(FAIL, f"answered {said} (the connection persists), then closed")
        if problem(again, "old2"):
            return verdict(FAIL, f"second request: {problem(again, 'old2')}")
    return verdict(PASS, f"kept open ({said}), second request answered")


def pipelined_problem(target: Target, count: int) -> str:
    """'' when `count` requests written at once, each with params of its own, are answered
    on that connection, each correctly and in order; else what went wrong (an answer that
    belongs to another request of the batch is named as out of order)."""
    tags = [f"pipe{i}" for i in range(1, count + 1)]
    with target.connect() as conn:
        conn.send(b"".join(target.request(t) for t in tags))
        for i, tag in enumerate(tags):
            try:
                answer = conn.read_response()
            except ClosedUnanswered:
                return f"closed after {i} of {count} pipelined answers"
            except Unanswered as exc:
                return f"answer {i + 1} of {count}: {exc}"
            if problem(answer, tag):
                other = [j for j, t in enumerate(tags) if j != i and not problem(answer, t)]
                if other:
                    return (f"answer {i + 1} of {count} is request {other[0] + 1}'s: the "
                            f"answers came out of order")
                return f"answer {i + 1} of {count}: {problem(answer, tag)}"
    return ""


def check_pipelining(target: Target) -> dict:
    wrong = pipelined_problem(target, 3)
    return verdict(FAIL, wrong) if wrong else \
        verdict(PASS, "3 requests in one write, answered in order")


def check_split(target: Target) -> dict:
    data = target.request("split")
    with target.connect() as conn:
        conn.send_in_pieces(data, (1, 7), SPLIT_PAUSE_S)
        answer = conn.read_response()
    if problem(answer, "split"):
        return verdict(FAIL, problem(answer, "split"))
    return verdict(PASS, f"{len(data)} bytes in 1- and 7-byte writes, answered")


def malformed(target: Target, data: bytes, tag: str,
              judge: Callable[[Answer], str | None]) -> tuple[str, str]:
    """Send `data` on a connection of its own; (verdict, what was seen). `judge` names an
    answer that is allowed (returns the detail) or returns None for one that is not."""
    with target.connect() as conn:
        conn.send(data)
        try:
            answer = conn.read_response(MALFORMED_WAIT_S)
        except ClosedUnanswered:
            return PASS, "closed without answering"
    if answer.status >= 500 and answer.status != 501:
        return FAIL, f"answered {answer.status} (a server error)"
    allowed = judge(answer)
    if allowed is None:
        seen = f"answered {answer.status}"
        if 200 <= answer.status < 300:
            seen += f" with body {answer.body[:40]!r}"
        return FAIL, seen
    return PASS, allowed


def rejected_or_right(tag: str, rejections: tuple[int, ...], accepted: str):
    def judge(answer: Answer) -> str | None:
        if answer.status in rejections:
            return f"rejected: {answer.status}"
        if not problem(answer, tag):
            return accepted
        return None
    return judge


def check_bare_lf(target: Target) -> tuple[str, str]:
    """A server that does not take a bare LF as a line end (it need not) sees an invalid
    request-line, which SHOULD get a 400 (RFC 9112 §3): waiting on for a CRLF fails."""
    try:
        return malformed(target, target.request("lf", eol="\n"), "lf", rejected_or_right(
            "lf", REJECTED, "read the LFs as line ends: the right answer (RFC 9112 §2.2 MAY)"))
    except Unanswered as exc:
        return FAIL, (f"{exc}, the connection still open: it waits for a CRLF instead of "
                      "answering the invalid request-line with 400 (RFC 9112 §3, SHOULD)")


def check_obs_fold(target: Target) -> tuple[str, str]:
    """The token's value folded onto a second line: unfolded it is `<token> x`, which is
    not the token, so the right answers are 400 (rejected) and 401 (unfolded, refused);
    a 200 means the continuation line was dropped."""
    data = (target.request("fold").decode("latin-1")
            .replace(f"token: {target.token}\r\n", f"token: {target.token}\r\n x\r\n"))

    def judge(answer: Answer) -> str | None:
        if answer.status in (400, 401):
            return f"answered {answer.status}" + (
                " (unfolded: the token became '… x' and was refused)" * (answer.status == 401))
        return None
    return malformed(target, data.encode("latin-1"), "fold", judge)


def check_big_header(target: Target) -> tuple[str, str]:
    data = target.request("big", extra=(f"X-Padding: {'a' * BIG_HEADER}",))
    return malformed(target, data, "big", rejected_or_right(
        "big", TOO_LARGE, f"processed the {BIG_HEADER // 1024} KiB header: the right answer "
                          "(RFC 9110 §5.4 lets a server accept it)"))


def check_cl_te(target: Target) -> dict:
    """A GET with both Content-Length and Transfer-Encoding (the two framings agree on
    the 5 bytes), and a second request behind it in the same write. Allowed: rejecting,
    or answering by the Transfer-Encoding; either way the connection MUST then close, so
    the second request must never be answered."""
    data = target.request("clte", extra=("Content-Length: 5", "Transfer-Encoding: chunked"),
                          body="0\r\n\r\n") + target.request("after")
    with target.connect() as conn:
        conn.send(data)
        try:
            answer = conn.read_response(MALFORMED_WAIT_S)
        except ClosedUnanswered:
            return verdict(PASS, "closed without answering")
        first = f"answered {answer.status}"
        if answer.status >= 500 and answer.status != 501:
            return verdict(FAIL, f"{first} (a server error)")
        if 200 <= answer.status < 300 and problem(answer, "clte"):
            return verdict(FAIL, f"{first}, {problem(answer, 'clte')}")
        try:
            conn.read_response(CLOSE_WAIT_S)
        except ClosedUnanswered:
            return verdict(PASS, f"{first}, then closed the connection")
        except Unanswered:
            return verdict(FAIL, f"{first}, then kept the connection open (it MUST close)")
        return verdict(FAIL, f"{first} and kept the connection open: the request behind it "
                             "was answered too (it MUST close)")


def alive_after(target: Target, result: tuple[str, str] | dict) -> dict:
    """The malformed request's verdict, failed if the server no longer answers."""
    outcome = result if isinstance(result, dict) else verdict(*result)
    try:
        answer = plain(target, "alive")
        broken = problem(answer, "alive")
    except PROBLEMS as exc:
        broken = str(exc) or type(exc).__name__
    if broken:
        return verdict(FAIL, f"{outcome['detail']}; afterwards a plain request got: {broken}")
    return outcome


# ------------------------------------------------------------------- entry point

def begin_conformance(base_url: str, token: str,
                      timeout: float = TIMEOUT_S) -> Callable[[], dict]:
    """Send the plain request whose Date the date check later compares with, and return
    the function that runs every check: begun before other work (the contract's checks),
    the wait for the clock's next second overlaps that work instead of adding to it."""
    target = Target(base_url, token, timeout)
    try:
        first = plain(target, "base")
        broken = problem(first, "base")
    except PROBLEMS as exc:
        broken = str(exc) or type(exc).__name__
    if broken:
        return lambda: {name: verdict(NOT_APPLICABLE, f"GET /plain/ itself failed ({broken})")
                        for name in CHECKS}
    return lambda: run_checks(target, first)


def check_conformance(base_url: str, token: str, timeout: float = TIMEOUT_S) -> dict:
    """check name -> {"verdict", "detail"} for the endpoint at `base_url`, every check in
    CHECKS' order. When the plain request itself is not answered right, nothing can be
    judged: every check is not applicable, saying why."""
    return begin_conformance(base_url, token, timeout)()


def run_checks(target: Target, first: Answer) -> dict:
    malformed_checks = {"bare-lf": check_bare_lf, "cl-te": check_cl_te,
                        "obs-fold": check_obs_fold, "big-header": check_big_header}
    steps: dict[str, Callable[[], dict]] = {
        "length": lambda: check_length(target), "close": lambda: check_close(target),
        "keep-alive": lambda: check_keep_alive(target),
        "keep-alive-1.0": lambda: check_keep_alive_10(target),
        "pipelining": lambda: check_pipelining(target), "split": lambda: check_split(target),
        **{name: (lambda fn=fn: alive_after(target, fn(target)))
           for name, fn in malformed_checks.items()},
        # last: its wait for the clock's next second overlaps the other checks
        "date": lambda: check_date(target, first)}
    found = {}
    for name, step in steps.items():
        try:
            found[name] = step()
        except PROBLEMS as exc:
            found[name] = verdict(FAIL, str(exc) or type(exc).__name__)
    return {name: found[name] for name in CHECKS}
