"""`run_bench.py calibrate [run options]`: run the same selection twice (A/A) and store,
beside this machine's results, how much each figure of each case moves by noise alone;
`compare` then uses those per-case thresholds instead of the defaults, for baselines
comparable with the calibration's runs."""
from __future__ import annotations

import sys

from bench.analysis import compare
from bench.core.plan import plan
from bench.core.settings import Settings
from bench.session import FOR_RUN, Session, servers_unavailable
from bench.storage import calibration


def calibrate(settings: Settings, specs: dict, hosts=None) -> int:
    from bench.runner import Run
    unavailable = servers_unavailable(specs, hosts)
    cases = plan(settings, specs, unavailable=unavailable)
    docs = []
    with Session(settings, cases, hosts=hosts, needs=FOR_RUN) as session:
        for attempt in (1, 2):
            print(f"calibration run {attempt} of 2", flush=True)
            # the second run gets an order of its own
            doc = Run(session, cases, unavailable=unavailable if not settings.servers else {},
                      new_order=attempt > 1).execute()
            if doc["status"] != "complete":
                print(f"calibration stopped: run {doc['run_id']} is {doc['status']}",
                      file=sys.stderr)
                return 130 if doc["status"] == "interrupted" else 1
            docs.append(doc)
    found = compare.calibrate(*docs)
    machine = compare.machine_id(docs[0])
    path = calibration.save(settings.results_dir, machine, found)
    print(describe(found, machine, path))
    skipped = len(cases) - len(found["thresholds"])
    if skipped:
        print(f"{skipped} case(s) were not ok in both runs and got no threshold", file=sys.stderr)
    return 0


def describe(found: dict, machine: str, path) -> str:
    """The thresholds per case and figure, the noisiest req/s first."""
    thresholds = found["thresholds"]
    lines = [f"\nper-case thresholds for machine {machine} ({len(thresholds)} cases, "
             f"comparability key {found['key_id']}) in {path}:",
             f"  {'req/s':>7} {'p99':>7} {'errors':>9} {'cost':>7} {'start':>7} "
             f"{'memory':>7} {'instr':>7} {'calls':>7}  case"]
    order = sorted(thresholds.items(), key=lambda kv: -kv[1].get(compare.RPS, 0))
    for case_id, per_figure in order:
        def cell(figure, width, scale=100, unit="%", digits=1):
            value = per_figure.get(figure)
            return f"{'-':>{width}}" if value is None else \
                f"{value * scale:>{width - len(unit) - 1}.{digits}f} {unit}"
        lines.append(f"  {cell(compare.RPS, 7)} {cell(compare.P99, 7)} "
                     f"{cell(compare.ERROR_RATE, 9, unit='pp', digits=3)} "
                     f"{cell(compare.COST, 7)} {cell(compare.START, 7)} "
                     f"{cell(compare.MEMORY, 7)} "
                     f"{cell(compare.counted.INSTRUCTIONS, 7, digits=2)} "
                     f"{cell(compare.counted.SYSCALLS, 7, digits=2)}  {case_id}")
    return "\n".join(lines)
