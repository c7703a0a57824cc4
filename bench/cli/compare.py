"""`run_bench.py compare BASELINE CANDIDATE`: per case broken, slower, faster, unchanged or
not comparable, judged on req/s, p99, the error rate, the server's CPU per request, its
start-up and its peak memory. Reads stored JSON only.

Exit statuses (the README's table): 0 nothing regressed or broke (weak verdicts and "not
comparable" never fail; two runs not comparable as a whole exit 0 with a warning, so that
a nightly job recalibrates after a machine change instead of failing every night), 1 a
case is decisively worse in some figure, 3 a case broke (wins over 1), 2 bad input."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.analysis import compare
from bench.report import comparison
from bench.storage import calibration, results

EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2
EXIT_BROKEN = 3


# each figure's threshold flag besides req/s' --threshold (bench.analysis.figures)
THRESHOLD_FLAGS = (
    ("--p99-threshold", compare.P99, "percent", "change of median p99 latency"),
    ("--error-threshold", compare.ERROR_RATE, "percentage points", "rise of the error rate"),
    ("--cost-threshold", compare.COST, "percent",
     "change of the server's median CPU-µs per request"),
    ("--startup-threshold", compare.START, "percent",
     "change of the server's median start-up (spawn to /ping/)"),
    ("--memory-threshold", compare.MEMORY, "percent",
     "change of the server's median peak memory under load"),
    ("--instructions-threshold", compare.counted.INSTRUCTIONS, "percent",
     "change of instructions per request (--instructions)"),
    ("--syscalls-threshold", compare.counted.SYSCALLS, "percent",
     "change of system calls per request (--instructions)"))


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="compare two stored runs (exit 1 on a regression, "
                                       "3 when a case broke)")
    p.add_argument("baseline", type=Path, help="run folder or results.json")
    p.add_argument("candidate", type=Path, help="run folder or results.json")
    p.add_argument("--threshold", type=percent, default=compare.DEFAULT_THRESHOLD * 100,
                   metavar="PERCENT", help="smallest change of median req/s that counts, in "
                                           "percent (default: %(default)s; a calibration's "
                                           "per-case thresholds replace it)")
    for flag, figure, unit, what in THRESHOLD_FLAGS:
        p.add_argument(flag, type=percent, default=compare.ALL_DEFAULTS[figure] * 100,
                       metavar="POINTS" if unit == "percentage points" else "PERCENT",
                       help=f"smallest {what} that counts, in {unit} (default: %(default)s)")
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


def exit_status(cmp: compare.Comparison) -> int:
    if cmp.broken:
        return EXIT_BROKEN
    return EXIT_REGRESSION if cmp.regressed else 0


def run(args: argparse.Namespace, results_root: Path) -> int:
    try:
        base, cand = results.load(args.baseline), results.load(args.candidate)
        stored = None if args.no_calibration else calibration.load(
            args.results_dir or results_root, compare.machine_id(base))
    except (results.ResultsError, calibration.CalibrationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if not 0 < args.alpha < 1:
        print(f"error: --alpha must be between 0 and 1, got {args.alpha}", file=sys.stderr)
        return EXIT_BAD_INPUT
    cmp = compare.compare(base, cand, threshold=args.threshold / 100,
                          p99_threshold=args.p99_threshold / 100,
                          error_threshold=args.error_threshold / 100, alpha=args.alpha,
                          calibration=stored, cost_threshold=args.cost_threshold / 100,
                          start_threshold=args.startup_threshold / 100,
                          memory_threshold=args.memory_threshold / 100,
                          instructions_threshold=args.instructions_threshold / 100,
                          syscalls_threshold=args.syscalls_threshold / 100)
    text = comparison.FORMATS[args.format](cmp)
    print(text)
    if args.output:
        args.output.write_text(text)
    for line in comparison.warnings(cmp):
        print(f"warning: {line}", file=sys.stderr)
    return exit_status(cmp)
