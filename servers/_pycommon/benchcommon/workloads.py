"""The HTTP workloads every Python server shares (servers/README.md, "The HTTP workloads"):
where /static/ serves from, whether compression is on, the /upload/ answer and limit, and
the /delay/ wait and body. No framework and no I/O here, so that django (which has its
own project) imports it as well as aiohttp, fastapi and sanic.
"""
from __future__ import annotations

import os
import zlib
from typing import Any, Mapping

STATIC_URL = "/static/"
UPLOAD_LIMIT = 8 * 1024 * 1024      # 8 MiB: a body over it is 413, up to it is accepted
READ_CHUNK = 64 * 1024              # a streamed body is read this much at a time
DELAY_SECONDS = 0.010
DELAY_BODY = "delayed 10 ms"

ERR_TOO_LARGE = {"error": f"body over {UPLOAD_LIMIT} bytes"}
ERR_METHOD = {"error": "method not allowed"}


def static_dir(env: Mapping[str, str] | None = None) -> str | None:
    """The folder /static/ serves, or None: then nothing is mounted at /static/ (404)."""
    env = os.environ if env is None else env
    return env.get("BENCH_STATIC_DIR") or None


def compression_on(env: Mapping[str, str] | None = None) -> bool:
    """BENCH_COMPRESSION=1: the framework's usual response compression is switched on;
    anything else: no compression middleware at all."""
    env = os.environ if env is None else env
    return env.get("BENCH_COMPRESSION", "").strip() == "1"


def declared_too_large(content_length: str | None) -> bool:
    """The request's Content-Length already says the body is over the limit (answered 413
    before a byte is read). A missing or unreadable value is left to the framework and to
    the count of what is read."""
    if not content_length or not content_length.isascii() or not content_length.isdigit():
        return False
    return len(content_length) > 12 or int(content_length) > UPLOAD_LIMIT


class Upload:
    """A body's CRC-32 (zlib's, as Python's zlib.crc32) and length, fed chunk by chunk
    as the framework reads it, so that the body is never held whole here."""

    __slots__ = ("size", "crc")

    def __init__(self) -> None:
        self.size = 0
        self.crc = 0

    def add(self, chunk: bytes) -> bool:
        """Count and checksum one chunk; False once the body is over the limit (the rest
        need not be checksummed: the answer is 413)."""
        self.size += len(chunk)
        if self.size > UPLOAD_LIMIT:
            return False
        self.crc = zlib.crc32(chunk, self.crc)
        return True

    @property
    def too_large(self) -> bool:
        return self.size > UPLOAD_LIMIT

    def answer(self) -> dict[str, Any]:
        """The 200 body: {"bytes": N, "crc32": "8 lowercase hex digits"}."""
        return {"bytes": self.size, "crc32": f"{self.crc:08x}"}
