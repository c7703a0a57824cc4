"""`run_bench.py report [RUN]`: report.html and charts of a stored run.
`run_bench.py history`: a machine's runs as series per case, with change points and charts.
Both read stored JSON only."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tabulate import tabulate

from bench.analysis import history
from bench.analysis.figures import INSTRUCTIONS, MEMORY, RPS, START, SYSCALLS
from bench.core.machine import fingerprint
from bench.infra.environment import environment
from bench.report import charts, html, tables
from bench.storage import results

EXIT_BAD_INPUT = 2


# --figure: the name on the command line -> (the figure, how a point is shown)
HISTORY_FIGURES = {"rps": (RPS, "req/s", 1), "startup": (START, "ms", 1000),
                   "memory": (MEMORY, "MiB", 1),
                   "instructions": (INSTRUCTIONS, "instructions per request", 1),
                   "syscalls": (SYSCALLS, "system calls per request", 1)}


def add_parsers(sub, results_default: Path) -> None:
    rep = sub.add_parser("report", help="write report.html and charts of a stored run")
    rep.add_argument("run", nargs="?", type=Path, help="run folder (default: the latest)")
    rep.add_argument("--results-dir", type=Path, default=results_default)
    his = sub.add_parser("history", help="each case's median over a machine's runs, with "
                                         "the points where its level changed")
    his.add_argument("--machine", help="machine id (default: this machine's; "
                                       "folders under results/ are machine ids)")
    his.add_argument("--server", help="only this server")
    his.add_argument("--test", help="only this test (get_user, update_user, plain, to_json)")
    his.add_argument("--figure", choices=sorted(HISTORY_FIGURES), default="rps",
                     help="what each point is the case's median of: rps (req/s, the "
                          "default), startup (spawn to the first /ping/, ms), memory (the "
                          "server's peak memory under load, MiB), or the runs' counts "
                          "(--instructions): instructions or syscalls per request")
    his.add_argument("--charts", type=Path, help="write a chart per case into this folder")
    his.add_argument("--results-dir", type=Path, default=results_default)


def report(args: argparse.Namespace) -> int:
    try:
        run_dir = args.run or results.latest_run(args.results_dir)
        doc = results.load(run_dir)
    except results.ResultsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    run_dir = run_dir if run_dir.is_dir() else run_dir.parent
    path = html.write(doc, tables.build_tables(doc), run_dir, tables.build_rate_tables(doc))
    print(f"report: {path}\ncharts: {run_dir / 'charts'}")
    return 0


def show_history(args: argparse.Namespace) -> int:
    machine = args.machine or fingerprint(environment())
    dirs = results.run_dirs(args.results_dir, machine)
    if not dirs:
        known = sorted({d.parent.name for d in results.run_dirs(args.results_dir)})
        print(f"error: no runs of machine {machine!r} under {args.results_dir}; machines "
              f"with runs: {', '.join(known) or 'none'}", file=sys.stderr)
        return EXIT_BAD_INPUT
    docs = []
    for d in dirs:
        try:
            docs.append(results.load(d))
        except results.ResultsError as exc:
            print(f"skipped {d}: {exc}", file=sys.stderr)
    test = args.test.replace("_", " ") if args.test else None
    figure, unit, scale = HISTORY_FIGURES[getattr(args, "figure", None) or "rps"]
    series = history.build(docs, server=args.server, test=test, figure=figure)
    several = {s.case_id for s in series if sum(o.case_id == s.case_id for o in series) > 1}
    rows = []
    for s in series:
        last = s.points[-1]
        steps = "; ".join(f"{cp.change:+.2%} at {cp.run_id} (p {cp.p_value:.1g})"
                          + (f", dependencies changed: {', '.join(cp.dependency_changes)}"
                             if cp.dependency_changes else "")
                          for cp in s.change_points) or "none"
        rows.append([s.title, f"{s.server} {s.database} {'orm' if s.orm else 'raw'}", s.key_id,
                     f"{s.points[0].run_id} … {last.run_id}", len(s.points),
                     f"{last.median * scale:,.{0 if figure in (RPS, INSTRUCTIONS) else 1}f}",
                     steps])
        if args.charts:
            args.charts.mkdir(parents=True, exist_ok=True)
            name = charts.slug(s.case_id) + (f"-{s.key_id}" if s.case_id in several else "")
            charts.history_chart(s, args.charts / f"{name}.png", machine, figure, unit, scale)
    print(f"# History of machine {machine}: {len(docs)} runs, {len(series)} series of "
          f"{len({s.case_id for s in series})} cases\n")
    print("A series holds the runs of one case that are comparable (same comparability "
          "key); change points are found within a series, never across a change of key.\n")
    print(tabulate(rows, ["test", "variant", "key", "runs from … to", "runs",
                          f"last median {figure}" + ("" if figure == RPS else f" ({unit})"),
                          "changes of level (E-divisive)"],
                   tablefmt="pipe", disable_numparse=True))
    changes = history.key_changes(docs)
    if changes:
        print("\n## Where the comparability key changed\n")
        for change in changes:
            print(f"- at {change.run_id} (after {change.previous_run_id}): "
                  f"{'; '.join(change.differences)}")
    if args.charts:
        print(f"\ncharts: {args.charts}")
    return 0
