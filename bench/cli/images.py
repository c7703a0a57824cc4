"""`run_bench.py images`: the database images of --db-mode docker, made ready ahead of a
run (the test suite's set-up uses it, so that the build is a timed phase of its own and
not the first docker test's wait): pulled where a registry answers, else built here from
the operating system's packages, and a line saying which and how long each build took
(nothing built: every image was cached)."""
from __future__ import annotations

import argparse
import os
import sys
import time

from bench.infra.containers import engine, images


def add_parser(sub) -> None:
    p = sub.add_parser("images", help="pull or build the database images of --db-mode docker "
                                      "(built here from the OS's packages where no registry "
                                      "answers) and say which, and how long it took")
    p.add_argument("--db-images", choices=images.SOURCES,
                   default=os.environ.get("BENCH_DB_IMAGES", "auto"),
                   help="as `run --db-images` (env BENCH_DB_IMAGES; default: %(default)s)")
    p.add_argument("--databases", default="postgres,mysql", metavar="A,B",
                   help="default: %(default)s")


def run(args: argparse.Namespace) -> int:
    wanted = [e.strip() for e in args.databases.split(",") if e.strip()]
    unknown = [e for e in wanted if e not in images.OFFICIAL]
    if unknown or not wanted:
        print(f"error: unknown --databases {unknown or args.databases!r}: choose from "
              f"{', '.join(images.OFFICIAL)}", file=sys.stderr)
        return 2
    found = engine.engine_state()
    if not found.answers:
        print(f"error: {found.why}", file=sys.stderr)
        return 1
    started = time.monotonic()
    try:
        choice = images.choose(wanted, args.db_images, None,
                               lambda text: print(f"images: {text}", flush=True))
    except images.ImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    builds = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in choice.built.items())
    print(f"images ({choice.source}: {choice.why}): "
          + ", ".join(choice.names[e] for e in wanted)
          + f"; {'built: ' + builds if builds else 'nothing built (cached)'}; "
          f"{time.monotonic() - started:.0f} s in all")
    return 0
