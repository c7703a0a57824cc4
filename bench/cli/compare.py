"""`run_bench.py compare BASELINE CANDIDATE`: per case faster, slower, unchanged or not
comparable; exit 1 when any case regressed, 2 on bad input. Reads stored JSON only."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.analysis import compare
from bench.report import comparison
from bench.storage import calibration, results

EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compare two stored runs (exit 1 on a regression)")
    p.add_argument("baseline", type=Path, help="run folder or results.json")
    p.add_argument("candidate", type=Path, help="run folder or results.json")
    p.add_argument("--threshold", type=percent, default=compare.DEFAULT_THRESHOLD * 100,
                   metavar="PERCENT", help="smallest change of median req/s that counts, in "
                                           "percent (default: %(default)s; a calibration's "
                                           "per-case thresholds replace it)")
    p.add_argument("--alpha", type=float, default=compare.ALPHA,
                   help="significance level of the Mann-Whitney U test (default: %(default)s)")
    p.add_argument("--no-calibration", action="store_true",
                   help="ignore a stored calibration of the baseline's machine")
    p.add_argument("--format", choices=sorted(comparison.FORMATS), default="md")
    p.add_argument("--output", type=Path, help="also write the output to this file")
    p.add_argument("--results-dir", type=Path, default=None,
                   help="where calibrations are kept (default: results/)")


def percent(text: str) -> float:
    value = float(text.rstrip("%"))
    if not 0 <= value < 100:
        raise argparse.ArgumentTypeError(f"{text}: a percentage from 0 to 100 is expected")
    return value


def run(args: argparse.Namespace, results_root: Path) -> int:
    try:
        base, cand = results.load(args.baseline), results.load(args.candidate)
    except results.ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not 0 < args.alpha < 1:
        print(f"error: --alpha must be between 0 and 1, got {args.alpha}", file=sys.stderr)
        return EXIT_BAD_INPUT
    thresholds, source = None, None
    if not args.no_calibration:
        stored = calibration.load(args.results_dir or results_root, compare.machine_id(base))
        if stored is not None:
            thresholds, source = stored["thresholds"], stored["path"]
    cmp = compare.compare(base, cand, threshold=args.threshold / 100, alpha=args.alpha,
                          thresholds=thresholds, calibration=source)
    text = comparison.FORMATS[args.format](cmp)
    print(text)
    if args.output:
        args.output.write_text(text)
    return EXIT_REGRESSION if cmp.regressed else 0
