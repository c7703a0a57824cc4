#!/usr/bin/env python3
"""How small a slowdown `run_bench.py ab` detects on this machine, and how often it calls
a change where there is none: TRIES A/B runs of a fixture server (tests/fixtures/
versions.py: the tunable_cost server, FIXTURE_COST_US of busy CPU per request) whose
candidate costs SLOWDOWN percent more CPU per request, and TRIES A/A runs of the same
version against itself. Prints a table per try (each figure's change, the A/A noise
floor, the verdict and what moved) and the counts.

    .venv/bin/python scripts/ab_sensitivity.py [--tries 5] [--slowdown 2] [--cost-us 400]
        [ab options: --repeat 8 --duration 2 --warmup 1 --connections 8 ...]

The planted slowdown is SLOWDOWN percent of the server's whole CPU per request, measured
first (one short run at --cost-us): the fixture's own overhead per request (HTTP parsing
in Python) is part of what it costs, so the busy loop grows by SLOWDOWN % of the total.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from tests.fixtures.versions import version  # noqa: E402

AB_DEFAULTS = ["--tests", "plain", "--repeat", "8", "--duration", "2", "--warmup", "1",
               "--connections", "8"]


def run_bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "run_bench.py"), *args], cwd=REPO,
                          capture_output=True, text=True)


def measured_cost_us(tmp: Path, cost_us: int, extra: list[str]) -> float:
    """The fixture's server CPU-µs per request at `cost_us` of planted work."""
    root = version(tmp / "probe", {"probe": str(cost_us)})
    done = run_bench("--servers", "probe", "--servers-dir", str(root / "servers"),
                     "--tests", "plain", "--no-ceiling", "--repeat", "2", "--duration", "2",
                     "--warmup", "1", "--connections", "8", "--results-dir",
                     str(tmp / "probe-results"), *extra)
    if done.returncode != 0:
        sys.exit(f"the probe run failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    doc = json.loads(next((tmp / "probe-results").glob("*/*/results.json")).read_text())
    costs = [s["resources"]["server"]["cpu_us_per_request"]
             for s in doc["cases"][0]["samples"] if s["status"] == "ok"]
    return sorted(costs)[len(costs) // 2]


def one_ab(tmp: Path, name: str, a_cost: float, b_cost: float, ab_args: list[str]) -> dict:
    a = version(tmp / f"{name}-a", {"fixture": f"{a_cost:.1f}"})
    b = version(tmp / f"{name}-b", {"fixture": f"{b_cost:.1f}"})
    out = tmp / f"{name}.json"
    done = run_bench("ab", str(a), str(b), "--all", *ab_args, "--results-dir",
                     str(tmp / f"{name}-results"), "--format", "json", "--output", str(out))
    if not out.exists():
        sys.exit(f"ab {name} stored no verdicts (exit {done.returncode}):\n"
                 f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return json.loads(out.read_text())["cases"][0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=5)
    parser.add_argument("--slowdown", type=float, default=2.0, help="percent")
    parser.add_argument("--cost-us", type=int, default=400)
    args, extra = parser.parse_known_args()
    ab_args = AB_DEFAULTS + extra
    with tempfile.TemporaryDirectory(prefix="ab-sensitivity-") as folder:
        tmp = Path(folder)
        total = measured_cost_us(tmp, args.cost_us, extra)
        planted = total * args.slowdown / 100
        print(f"server CPU per request at FIXTURE_COST_US={args.cost_us}: {total:.1f} µs; "
              f"planted {args.slowdown:g} % = +{planted:.1f} µs of busy loop\n"
              f"ab options: {' '.join(ab_args)}\n")
        print("| try | kind | req/s change | p | req/s A/A noise / threshold | cost change | p "
              "| cost A/A noise / threshold | verdict | moved |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        calls = {"slowdown": 0, "A/A": 0}
        for i in range(1, args.tries + 1):
            for kind, b_cost in (("slowdown", args.cost_us + planted), ("A/A", args.cost_us)):
                row = one_ab(tmp, f"{kind.replace('/', '')}{i}", args.cost_us, b_cost, ab_args)
                figs = {f["figure"]: f for f in row["figures"]}

                def cell(name: str) -> str:
                    f = figs.get(name) or {}
                    change, p = f.get("change"), f.get("p_value")
                    floor, threshold = f.get("noise_floor"), f.get("threshold")
                    return " | ".join([
                        "-" if change is None else f"{change:+.2%}",
                        "-" if p is None else f"{p:.3f}",
                        "-" if threshold is None else
                        f"{'-' if floor is None else f'{floor:.2%}'} / {threshold:.2%}"])
                flagged = row["verdict"] == "slower" if kind == "slowdown" else \
                    row["verdict"] not in ("unchanged",)
                calls[kind] += flagged
                print(f"| {i} | {kind} | {cell('req/s')} | {cell('cost')} | {row['verdict']} "
                      f"| {', '.join(row.get('moved') or []) or '-'} |", flush=True)
        print(f"\nplanted {args.slowdown:g} % slowdown flagged slower in {calls['slowdown']} of "
              f"{args.tries}; A/A runs with a verdict other than unchanged: {calls['A/A']} of "
              f"{args.tries}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
