#!/usr/bin/env python3
"""Render the result tables of a stored run (default: the latest) without re-running anything.

    python create_markdown_tables.py [RESULTS] [--format md|csv|json] [--no-write]

RESULTS is a run folder or its results.json (any schema version this harness reads).
The tables are printed and written next to the results as tables.<format>.
"""
import argparse
import sys
from pathlib import Path

from bench.report import formats, tables
from bench.storage import results

REPO = Path(__file__).resolve().parent


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="?", type=Path,
                   help="run folder or results.json (default: the latest run under results/)")
    p.add_argument("--format", choices=sorted(formats.EXPORTERS), default="md")
    p.add_argument("--no-write", action="store_true", help="print only")
    args = p.parse_args(argv)
    try:
        run_dir = args.results or results.latest_run(REPO / "results")
        doc = results.load(run_dir)
    except results.ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    run_dir = run_dir if run_dir.is_dir() else run_dir.parent
    text = formats.EXPORTERS[args.format](tables.build_tables(doc), doc)
    print(text)
    if not args.no_write:
        (run_dir / f"tables.{args.format}").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
