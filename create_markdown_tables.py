#!/usr/bin/env python3
"""Render the result tables of a stored run (default: the latest) without re-running anything.

    python create_markdown_tables.py [RESULTS] [--format md|csv|json] [--columns A,B]
                                     [--output FILE] [--no-write]

RESULTS is a run folder or its results.json (any schema version this harness reads).
By default the tables have the contract's columns (req/sec with its spread); --columns
adds: errors, spread (95 % CI), cpu (server cores), memory (server PSS), per-core
(requests per server CPU-second), relative (to the best row). Every case is shown, a
failed, invalid, unverified or interrupted one with its reason. The tables are printed
and written next to the results as tables.<format> (or to --output).
"""
import argparse
import sys
from pathlib import Path

from bench.report import formats, tables
from bench.storage import results

REPO = Path(__file__).resolve().parent


def columns(text: str) -> list[str]:
    names = [c.strip() for c in text.split(",") if c.strip()]
    unknown = [c for c in names if c not in formats.EXTRA_COLUMNS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown column(s) {', '.join(unknown)}; valid: "
                                         f"{', '.join(formats.EXTRA_COLUMNS)}")
    return names


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("results", nargs="?", type=Path,
                   help="run folder or results.json (default: the latest run under results/)")
    p.add_argument("--format", choices=sorted(formats.EXPORTERS), default="md")
    p.add_argument("--columns", type=columns, default=[],
                   help=f"extra columns: {', '.join(formats.EXTRA_COLUMNS)}")
    p.add_argument("--output", type=Path, help="write here instead of the run folder")
    p.add_argument("--no-write", action="store_true", help="print only")
    args = p.parse_args(argv)
    try:
        run_dir = args.results or results.latest_run(REPO / "results")
        doc = results.load(run_dir)
    except results.ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    run_dir = run_dir if run_dir.is_dir() else run_dir.parent
    text = formats.EXPORTERS[args.format](tables.build_tables(doc), doc, args.columns,
                                          rates=tables.build_rate_tables(doc))
    print(text)
    if not args.no_write:
        (args.output or run_dir / f"tables.{args.format}").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
