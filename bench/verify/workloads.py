"""Verification of the HTTP workloads (servers/README.md, "The HTTP workloads"), before
any load, for the tests a run measures: `static` (the bytes, the headers a static
handler owes, 304, 206, and no way out of the folder), `upload` (length and CRC-32 of
bodies up to the limit, 413 above it) and `delay` (the body, after at least the wait).

Each check is named after its test, so that a planted defect (tests/fixtures/
http_defects) fails exactly its own. Answers are asked for without compression
(`Accept-Encoding: identity`): compression has a check of its own.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
import zlib
from urllib.parse import urlsplit

from bench.core import workloads
from bench.infra import static_files
from bench.verify.checks import Check, Client, make_check
from bench.verify.rawhttp import Connection, request_bytes
from bench.verify.conformance import PROBLEMS

PLAIN = {"Accept-Encoding": "identity"}
RANGE = (100, 199)                      # the bytes a Range request asks for (inclusive)
# paths out of the folder, as a client may write them (sent as they are, never normalised
# by a client library): the file beside the folder, and a system file further up
CLIMBS = ("/static/../" + static_files.OUTSIDE, "/static/%2e%2e/" + static_files.OUTSIDE,
          "/static/..%2f" + static_files.OUTSIDE, "/static/%2e%2e%2f" + static_files.OUTSIDE,
          "/static/..%5c" + static_files.OUTSIDE, "/static/../../../../../../../../etc/passwd")
SECRETS = (static_files.OUTSIDE_CONTENT, b"root:x:0:0")
MEDIA = "application/octet-stream"


def media_type(resp) -> str:
    return resp.headers.get("Content-Type", "").split(";")[0].strip().lower()


def verify_workloads(base_url: str, token: str, tests, timeout: float = 5.0) -> list[Check]:
    """The checks of those of `tests` that are HTTP workloads, in the order given."""
    client = Client(base_url, token, timeout)
    try:
        runs = {workloads.STATIC_TEST: lambda: check_static(client, base_url, timeout),
                workloads.UPLOAD_TEST: lambda: check_upload(client, base_url, token, timeout),
                workloads.DELAY_TEST: lambda: check_delay(client)}
        return [check for test in tests if test in runs for check in runs[test]()]
    finally:
        client.close()


# ------------------------------------------------------------------------ static

def check_static(c: Client, base_url: str, timeout: float) -> list[Check]:
    problems = []
    for name, (size, digest) in static_files.catalog().items():
        label = f"GET /static/{name}"
        resp, err = c.request("GET", f"/static/{name}", token=None, headers=PLAIN)
        wrong = [err] if resp is None else file_problems(label, resp, size, digest)
        if not wrong and name == "64k.txt":
            wrong += conditional_problems(c, name, resp) + range_problems(c, name, size)
        problems += wrong
    checks = [make_check("static", problems, f"{', '.join(static_files.FILES)}: the bytes, "
                                             f"Content-Length, text/plain, a validator; "
                                             f"304 and 206 answered")]
    resp, err = c.request("GET", "/static/missing.txt", token=None, headers=PLAIN)
    checks.append(make_check("static missing file", [err] if resp is None else [
        "" if 400 <= resp.status_code < 500 else
        f"GET /static/missing.txt: status {resp.status_code}, expected a 4xx"]))
    checks.append(make_check("static path out of the folder",
                             climb_problems(base_url, timeout),
                             f"{len(CLIMBS)} paths that climb out refused"))
    return checks


def file_problems(label: str, resp, size: int, digest: str) -> list[str]:
    if resp.status_code != 200:
        return [f"{label}: status {resp.status_code}, expected 200"]
    out = []
    if resp.headers.get("Content-Encoding", "identity") != "identity":
        out.append(f"{label}: Content-Encoding {resp.headers['Content-Encoding']!r} though "
                   f"the request asked for identity")
    if hashlib.sha256(resp.content).hexdigest() != digest:
        out.append(f"{label}: {len(resp.content):,} bytes that are not the file's "
                   f"({size:,} bytes)")
    if resp.headers.get("Content-Length") != str(size):
        out.append(f"{label}: Content-Length {resp.headers.get('Content-Length')!r}, "
                   f"expected {size}")
    if media_type(resp) != static_files.CONTENT_TYPE:
        out.append(f"{label}: Content-Type {resp.headers.get('Content-Type')!r}, expected "
                   f"{static_files.CONTENT_TYPE}")
    if not (resp.headers.get("ETag") or resp.headers.get("Last-Modified")):
        out.append(f"{label}: neither ETag nor Last-Modified (a cache cannot revalidate)")
    return out


def conditional_problems(c: Client, name: str, first) -> list[str]:
    etag, modified = first.headers.get("ETag"), first.headers.get("Last-Modified")
    header = {"If-None-Match": etag} if etag else {"If-Modified-Since": modified}
    label = f"GET /static/{name} with {next(iter(header))}"
    resp, err = c.request("GET", f"/static/{name}", token=None, headers={**PLAIN, **header})
    if resp is None:
        return [err]
    if resp.status_code != 304:
        return [f"{label}: status {resp.status_code}, expected 304"]
    return [f"{label}: 304 with a {len(resp.content)}-byte body"] if resp.content else []


def range_problems(c: Client, name: str, size: int) -> list[str]:
    first, last = RANGE
    label = f"GET /static/{name} with Range: bytes={first}-{last}"
    resp, err = c.request("GET", f"/static/{name}", token=None,
                          headers={**PLAIN, "Range": f"bytes={first}-{last}"})
    if resp is None:
        return [err]
    if resp.status_code != 206:
        return [f"{label}: status {resp.status_code}, expected 206"]
    out = []
    want = f"bytes {first}-{last}/{size}"
    if resp.headers.get("Content-Range") != want:
        out.append(f"{label}: Content-Range {resp.headers.get('Content-Range')!r}, "
                   f"expected {want!r}")
    if resp.content != static_files.content(size)[first:last + 1]:
        out.append(f"{label}: {len(resp.content)} bytes that are not bytes {first}-{last}")
    return out


def climb_problems(base_url: str, timeout: float) -> list[str]:
    """Each path sent as written, on a connection of its own: a 4xx (or a redirect),
    never a 5xx, never a 2xx, never a byte of what lies outside."""
    parts = urlsplit(base_url)
    out = []
    for target in CLIMBS:
        try:
            with Connection(parts.hostname, parts.port or 80, timeout) as conn:
                conn.send(request_bytes(target, parts.netloc, "", extra=("Connection: close",)))
                answer = conn.read_response()
        except PROBLEMS as exc:
            out.append(f"GET {target}: {type(exc).__name__}: {exc}")
            continue
        if any(secret in answer.body for secret in SECRETS):
            out.append(f"GET {target}: status {answer.status} with a file outside the folder")
        elif not 300 <= answer.status < 500:
            out.append(f"GET {target}: status {answer.status}, expected a 4xx")
    return out


# ------------------------------------------------------------------------ upload

def crc32_hex(body: bytes) -> str:
    return f"{zlib.crc32(body):08x}"


def check_upload(c: Client, base_url: str, token: str, timeout: float) -> list[Check]:
    problems = []
    bodies = (b"", os.urandom(workloads.SIZE_BYTES["64k"]),
              os.urandom(workloads.SIZE_BYTES["1m"]), os.urandom(workloads.UPLOAD_LIMIT))
    for body in bodies:
        label = f"POST /upload/ with {len(body):,} bytes"
        resp, err = c.request("POST", "/upload/", data=body,
                              headers={**PLAIN, "Content-Type": MEDIA})
        problems += [err] if resp is None else upload_problems(label, resp, body)
    checks = [make_check("upload", problems, "bodies of 0, 64 KiB, 1 MiB and the 8 MiB "
                                             "limit: their length and CRC-32 answered")]
    resp, err = c.request("POST", "/upload/", token=None, data=b"x" * 16,
                          headers={"Content-Type": MEDIA}, connection_of_its_own=True)
    checks.append(make_check("upload without token", [err] if resp is None else [
        "" if resp.status_code == 401 else f"POST /upload/ without token: status "
                                           f"{resp.status_code}, expected 401"]))
    checks.append(make_check("upload over the limit", over_limit_problems(base_url, token,
                                                                          timeout),
                             f"{workloads.UPLOAD_LIMIT + 1:,} bytes answered 413"))
    return checks


def upload_problems(label: str, resp, body: bytes) -> list[str]:
    if resp.status_code != 200:
        return [f"{label}: status {resp.status_code}, expected 200"]
    try:
        answer = json.loads(resp.content)
    except ValueError:
        return [f"{label}: the answer is not JSON: {resp.content[:60]!r}"]
    want = {"bytes": len(body), "crc32": crc32_hex(body)}
    return [] if answer == want else [f"{label}: answered {str(answer)[:100]}, expected {want}"]


def over_limit_problems(base_url: str, token: str, timeout: float) -> list[str]:
    """One byte over the limit, on a raw connection: a server may answer 413 before the
    body is in and close, which breaks the rest of the upload; what it answered is read
    all the same."""
    parts = urlsplit(base_url)
    size = workloads.UPLOAD_LIMIT + 1
    label = f"POST /upload/ with {size:,} bytes"
    head = (f"POST /upload/ HTTP/1.1\r\nHost: {parts.netloc}\r\ntoken: {token}\r\n"
            f"Content-Type: {MEDIA}\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n")
    try:
        with Connection(parts.hostname, parts.port or 80, timeout) as conn:
            if conn.send(head.encode("latin-1")):
                conn.send(b"\0" * size)
            answer = conn.read_response()
    except PROBLEMS as exc:
        return [f"{label}: {type(exc).__name__}: {exc}"]
    return [] if answer.status == 413 else [f"{label}: status {answer.status}, expected 413"]


# ------------------------------------------------------------------------ delay

def check_delay(c: Client) -> list[Check]:
    started = time.monotonic()
    resp, err = c.request("GET", "/delay/", headers=PLAIN)
    took_ms = (time.monotonic() - started) * 1000
    problems = [err] if resp is None else []
    if resp is not None:
        if resp.status_code != 200:
            problems.append(f"GET /delay/: status {resp.status_code}, expected 200")
        elif resp.content.decode("utf-8", "replace") != workloads.DELAY_BODY:
            problems.append(f"GET /delay/: body {resp.content[:40]!r}, expected "
                            f"{workloads.DELAY_BODY!r}")
        elif media_type(resp) != "text/plain":
            problems.append(f"GET /delay/: Content-Type {resp.headers.get('Content-Type')!r}")
        elif took_ms < workloads.DELAY_MS:
            problems.append(f"GET /delay/: answered after {took_ms:.1f} ms, before the "
                            f"{workloads.DELAY_MS} ms wait")
    unauthorised, err = c.request("GET", "/delay/", token=None, headers=PLAIN)
    if unauthorised is None or unauthorised.status_code != 401:
        problems.append(err or f"GET /delay/ without token: status "
                               f"{unauthorised.status_code}, expected 401")
    return [make_check("delay", problems, f"{workloads.DELAY_BODY!r} after {took_ms:.1f} ms")]
