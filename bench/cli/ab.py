"""`run_bench.py ab BASELINE CANDIDATE [run options]`: measure two versions of the servers
(git refs or folders) in one sitting, interleaved, and give paired verdicts; exit 3 when a
case broke on the candidate, 1 when one got worse, 0 otherwise, 2 on bad input, 130 when
interrupted."""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from bench.cli import arguments
from bench.core.settings import Settings
from bench.report import ab as ab_report
from bench.storage import results

EXIT_WORSE, EXIT_BAD_INPUT, EXIT_BROKEN, EXIT_INTERRUPTED = 1, 2, 3, 130
# --instructions in ab: two counts of each version (A B B A), so the sitting shows how
# far one version's counts differ from each other, as its samples' A/A pairs do
AB_COUNT_RUNS = 2


def add_parser(sub) -> None:
    p = sub.add_parser("ab", help="measure two versions (git refs or folders) in one sitting, "
                                  "interleaved, and compare them sample by sample")
    p.add_argument("baseline", help="git ref (branch, tag, commit) or a folder holding a "
                                    "checkout of this project: the A version")
    p.add_argument("candidate", help="the same for the B version (`.` is this checkout, "
                                     "with its uncommitted changes)")
    p.add_argument("--all", dest="everything", action="store_true",
                   help="measure every server both versions have (default: those whose "
                        "folder, or the shared code it uses, differs)")
    p.add_argument("--format", choices=sorted(ab_report.FORMATS), default="md")
    p.add_argument("--output", type=Path, help="also write the verdicts to this file")
    arguments.add_selection(p)
    arguments.add_load(p)
    arguments.add_server_settings(p)
    arguments.add_instructions(p)
    arguments.add_databases(p)
    arguments.add_hosts(p)
    p.set_defaults(preset="ab")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from bench.core.settings import SelectionError
    from bench.runner.ab import run_ab
    if args.resume or args.rerun_failed:
        raise SelectionError("ab cannot --resume or --rerun-failed: start it again (the "
                             "samples it stored are kept in its run folder)")
    if settings.instructions and getattr(args, "instructions_runs", None) is None:
        settings = replace(settings, instructions_runs=AB_COUNT_RUNS)
    outcome = run_ab(settings, args.baseline, args.candidate, everything=args.everything,
                     hosts=arguments.hosts_from(args), display=getattr(args, "display", "auto"))
    doc, rows = outcome.doc, outcome.rows
    text = ab_report.FORMATS[args.format](doc, rows, outcome.selection.why,
                                          outcome.selection.servers)
    print(text)
    if args.output:
        args.output.write_text(text)
    if doc is not None:
        print(f"ab: verdicts in {outcome.run_dir}/ab.md and ab.json", file=sys.stderr)
        if doc["status"] not in (results.COMPLETE, "interrupted"):
            print(f"ab: run {doc['run_id']} is {doc['status']}: {doc.get('reason')}",
                  file=sys.stderr)
    return exit_status(doc["status"] if doc is not None else None, [r.verdict for r in rows])


def exit_status(status: str | None, verdicts: list[str]) -> int:
    """The exit status of a run in `status` (None: nothing was measured) whose cases got
    `verdicts`: interrupted, then broken, then worse (a slower case or an incomplete run)."""
    if status == "interrupted":
        return EXIT_INTERRUPTED
    if "broken" in verdicts:
        return EXIT_BROKEN
    incomplete = status is not None and status != results.COMPLETE
    return EXIT_WORSE if incomplete or "slower" in verdicts else 0
