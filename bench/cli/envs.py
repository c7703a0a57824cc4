"""`run_bench.py envs`: the servers' own environments this machine has cached (the
Python virtualenvs and --dep copies of bench.infra.envs), what each costs in disk and
in the time it took to make, how long since a run used it; `--prune DAYS` removes those
unused for that long (a run prunes at envs.PRUNE_AFTER_DAYS by itself)."""
from __future__ import annotations

import argparse

from tabulate import tabulate

from bench.infra import envs


def add_parser(sub) -> None:
    p = sub.add_parser("envs", help="list the servers' own cached environments (size, time "
                                    "to make, days unused); --prune DAYS removes old ones")
    p.add_argument("--prune", type=float, default=None, metavar="DAYS",
                   help="remove the environments no run used for DAYS days (0: all)")


def run(args: argparse.Namespace) -> int:
    if args.prune is not None:
        if args.prune < 0:
            print("error: --prune DAYS must be 0 or more", flush=True)
            return 2
        gone = envs.prune(args.prune)
        print(f"removed {len(gone)} environment(s) unused for {args.prune:g} day(s)"
              + (f": {', '.join(gone)}" if gone else ""))
    found = envs.listing()
    rows = [[e["name"], e["server"] or "-", f"{e['bytes'] / 2**20:,.0f}",
             "-" if e["seconds"] is None else f"{e['seconds']:g}", e["days_unused"],
             "yes" if e["complete"] else "no (half-made: made again on next use)"]
            for e in found]
    print(tabulate(rows, ["environment", "made for", "MiB", "seconds to make", "days unused",
                          "complete"], tablefmt="simple"))
    total = sum(e["bytes"] for e in found) / 2**20
    print(f"\n{len(found)} environment(s), {total:,.0f} MiB in {envs.CACHE_DIR / 'envs'}; "
          f"unused for {envs.PRUNE_AFTER_DAYS} days: removed by the next run that makes one")
    return 0
