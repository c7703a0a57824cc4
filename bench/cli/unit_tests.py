"""`python -m bench.cli.unit_tests --servers all|A,B`: the servers' own unit tests, as
each manifest's [unit_tests] declares them (the Makefile's test tiers call it; the Python
servers' shared code is tested by pytest itself). A command several servers share (the
Rust workspace's one cargo run, the Go servers' shared module) runs once. A server whose
toolchain is missing fails here, with the reason: the tests of a selected server are
never skipped.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from bench.core import manifest
from bench.core.settings import Settings
from bench.infra.server import ServerError, build, template_values
from bench.paths import CACHE_DIR
from bench.setup.toolchains import unavailable


def plan(specs: list[manifest.ServerSpec]) -> list[tuple[manifest.ServerSpec, tuple[str, ...]]]:
    """(server, expanded argv) in order, each distinct command once."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for spec in specs:
        if spec.unit_tests is None:
            continue
        values = template_values(spec, Settings(), "none")
        for command in spec.unit_tests.commands:
            argv = tuple(manifest.expand(a, values) for a in command)
            # the same command in the same folder, or one that names its folders itself
            key = argv if "{servers_dir}" in " ".join(command) else (str(spec.dir), *argv)
            if key not in seen:
                seen.add(key)
                out.append((spec, argv))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cli.unit_tests", description=__doc__)
    parser.add_argument("--servers", default="all", help="all, or a comma list ('' for none)")
    # beside `run_bench.py build`'s logs (one file per server, each build appended), not in
    # /tmp, where a test run left files nothing owned
    parser.add_argument("--logs", type=Path, default=CACHE_DIR,
                        help="where each server's build log goes (after_build; default "
                             f"{CACHE_DIR})")
    args = parser.parse_args(argv)
    specs = manifest.discover()
    wanted = sorted(specs) if args.servers.strip() == "all" else \
        [s for s in args.servers.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in specs]
    if unknown:
        print(f"error: unknown server(s) {', '.join(unknown)}; valid: {', '.join(specs)}",
              file=sys.stderr)
        return 2
    chosen = [specs[s] for s in wanted]
    missing = unavailable({s.id: s for s in chosen if s.unit_tests is not None})
    failed = [f"{sid}: {why}" for sid, why in missing.items()]
    started = time.monotonic()
    for spec, command in plan(chosen):
        if any(f.startswith(f"{spec.id}:") for f in failed):
            continue
        t0 = time.monotonic()
        try:
            if spec.unit_tests.after_build:
                build(spec, Settings(), args.logs / f"build-{spec.id}.log")
            done = subprocess.run(command, cwd=spec.dir)
        except (ServerError, OSError) as exc:
            failed.append(f"{spec.id}: {exc}")
            continue
        print(f"  {spec.id}: {' '.join(command[:3])} ... {time.monotonic() - t0:.1f} s"
              f"{'' if done.returncode == 0 else f'  FAILED (exit {done.returncode})'}",
              flush=True)
        if done.returncode != 0:
            failed.append(f"{spec.id}: `{' '.join(command)}` exited {done.returncode}")
    tested = [s.id for s in chosen if s.unit_tests is not None]
    print(f"servers' own unit tests ({', '.join(tested) or 'none selected'}): "
          f"{time.monotonic() - started:.0f} s", flush=True)
    for line in failed:
        print(f"error: {line}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
