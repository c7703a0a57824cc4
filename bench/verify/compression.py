"""Verification of compression (--compression gzip,br; servers/README.md, "The HTTP
workloads"), before any load, on a server started with BENCH_COMPRESSION=1: every
answer the compressed cases will get is decoded here and compared with what it must be.

- `to json` with `Accept-Encoding: <encoding>`: encoded with it and decoding to the
  contract's JSON, or sent as is (a framework's minimum size: a 40-byte answer is often
  not worth compressing, and the tables then show no saving);
- the static test's 64 KiB and 1 MiB files: encoded with it (text that size is above
  every minimum), decoding to the file's bytes, with `Vary: Accept-Encoding`.

An answer that names an encoding its body is not in (or another encoding than the one
asked for) fails: the bytes on the wire would be a lie. Raw sockets, so that nothing
decodes on the harness's behalf.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from urllib.parse import urlsplit

import brotli

from bench.infra import static_files
from bench.verify.checks import Check, make_check
from bench.verify.conformance import PROBLEMS
from bench.verify.rawhttp import Connection, request_bytes

CHECK = "compression"
TO_JSON = ("/to_json/?param1=compressed&param2=b&param3=c",
           {"param1": "compressed", "param2": "b", "param3": "c"})
FILES = ("64k.txt", "1m.txt")
DECODERS = {"gzip": gzip.decompress, "br": brotli.decompress}


def check_compression(base_url: str, token: str, encodings, timeout: float = 5.0) -> list[Check]:
    parts = urlsplit(base_url)
    problems, seen = [], []

    def ask(target: str, encoding: str):
        with Connection(parts.hostname, parts.port or 80, timeout) as conn:
            conn.send(request_bytes(target, parts.netloc, token,
                                    extra=(f"Accept-Encoding: {encoding}",)))
            return conn.read_response()

    for encoding in encodings:
        try:
            path, want = TO_JSON
            answer = ask(path, encoding)
            body, wrong = decoded(answer, encoding, f"GET /to_json/ ({encoding})",
                                  required=False)
            if not wrong and json.loads(body) != want:
                wrong = f"GET /to_json/ ({encoding}): decodes to {body[:80]!r}, expected {want}"
            problems.append(wrong)
            seen.append(f"{encoding}: to json {answer.header('content-encoding') or 'as is'}")
            catalog = static_files.catalog()
            for name in FILES:
                label = f"GET /static/{name} ({encoding})"
                answer = ask(f"/static/{name}", encoding)
                body, wrong = decoded(answer, encoding, label, required=True)
                if not wrong and hashlib.sha256(body).hexdigest() != catalog[name][1]:
                    wrong = f"{label}: decodes to {len(body):,} bytes that are not the file's"
                problems.append(wrong)
                if not wrong:
                    seen.append(f"{name} {len(answer.body):,} B")
        except PROBLEMS as exc:
            problems.append(f"{encoding}: {type(exc).__name__}: {exc}")
    return [make_check(CHECK, problems, "; ".join(seen))]


def decoded(answer, encoding: str, label: str, required: bool) -> tuple[bytes, str]:
    """(the body as decoded, '' or what is wrong)."""
    if answer.status != 200:
        return b"", f"{label}: status {answer.status}, expected 200"
    said = (answer.header("content-encoding") or "identity").strip().lower()
    if said == "identity":
        return answer.body, (f"{label}: sent as is (no Content-Encoding): every response, "
                             f"static files included, is compressed" if required else "")
    if said != encoding:
        return b"", f"{label}: Content-Encoding {said!r}, but {encoding!r} was asked for"
    try:
        body = DECODERS[encoding](answer.body)
    except (OSError, EOFError, zlib.error, brotli.error) as exc:
        return b"", (f"{label}: says Content-Encoding {said} but its {len(answer.body):,} "
                     f"bytes do not decode ({type(exc).__name__}: {str(exc)[:80]})")
    if "accept-encoding" not in (answer.header("vary") or "").lower():
        return body, f"{label}: compressed without Vary: Accept-Encoding (a cache would " \
                     f"serve it to a client that cannot decode it)"
    return body, ""
