"""The files the `static` test serves (servers/README.md, "The HTTP workloads"): made by
the harness, the same bytes on every machine, and a file beside their folder that no
server may ever serve (what verification's climb out of the folder asks for).

The content is text (words drawn from a fixed list with a fixed seed, in lines), so that
compression has something real to do, as it would with CSS, JS or HTML: random bytes
would not compress, and one repeated word would compress absurdly well.

`python -m bench.infra.static_files` writes them and prints the folder.
"""
from __future__ import annotations

import hashlib
import random
from pathlib import Path

from bench.paths import CACHE_DIR

VERSION = 1                     # of the content: a change makes a new folder
# name -> size in bytes; the test's size levels name them by the part before ".txt"
FILES = {"1k.txt": 1024, "64k.txt": 64 * 1024, "1m.txt": 1024 * 1024}
SIZES = tuple(name.removesuffix(".txt") for name in FILES)
CONTENT_TYPE = "text/plain"
# beside the served folder, never in it: a server that serves it let a path climb out
OUTSIDE = "outside.txt"
OUTSIDE_CONTENT = b"webbench: this file is outside BENCH_STATIC_DIR and must never be served\n"
_WORDS = ("static file benchmark harness request answer server client connection "
          "header body range etag modified cache content length type text plain json "
          "frame stream window buffer socket kernel sendfile read write byte chunk gzip "
          "brotli level minimum size route handler folder path climb refuse verify").split()


def content(size: int, seed: int = VERSION) -> bytes:
    """`size` bytes of lines of words, the same for a size and seed everywhere."""
    rng = random.Random(f"webbench-static-{seed}-{size}")
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 14))) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines).encode("ascii")[:size]


def catalog() -> dict[str, tuple[int, str]]:
    """name -> (size, sha256 hex) of every file served."""
    return {name: (size, hashlib.sha256(content(size)).hexdigest())
            for name, size in FILES.items()}


def local_root() -> Path:
    return CACHE_DIR / "static" / f"v{VERSION}"


def ensure(root: Path | None = None) -> Path:
    """The served folder under `root` (default: the harness cache), its files written
    where missing or not what they must be; the outside file beside it."""
    root = root or local_root()
    folder = root / "files"
    folder.mkdir(parents=True, exist_ok=True)
    for name, (size, digest) in catalog().items():
        path = folder / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            path.write_bytes(content(size))
    outside = root / OUTSIDE
    if not outside.is_file() or outside.read_bytes() != OUTSIDE_CONTENT:
        outside.write_bytes(OUTSIDE_CONTENT)
    return folder


_READY: dict[int, str] = {}      # id(host) -> its folder, once written in this process


def folder_on(host) -> str:
    """The served folder where `host` runs servers: this machine's cache, copied into the
    host's own cache when it is another machine; written once per host and process (every
    server start asks)."""
    if id(host) in _READY:
        return _READY[id(host)]
    folder = ensure()
    if host.remote:
        remote = f"{host.cache_dir()}/static/v{VERSION}"
        for name in FILES:
            host.put(folder / name, f"{remote}/files/{name}")
        host.put(folder.parent / OUTSIDE, f"{remote}/{OUTSIDE}")
        folder = f"{remote}/files"
    _READY[id(host)] = str(folder)
    return str(folder)


if __name__ == "__main__":
    print(ensure())
