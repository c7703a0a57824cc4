"""`run_bench.py calibrate [run options]`: run the same selection twice (A/A) and store,
beside this machine's results, how much each case moves by noise alone; `compare` then
uses those per-case thresholds instead of one global one."""
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
    thresholds = compare.calibrate(*docs)
    machine = compare.machine_id(docs[0])
    path = calibration.save(settings.results_dir, machine, thresholds,
                            [d["run_id"] for d in docs], docs[0]["settings"])
    print(f"\nper-case thresholds for machine {machine} ({len(thresholds)} cases) in {path}:")
    for case_id, value in sorted(thresholds.items(), key=lambda kv: -kv[1]):
        print(f"  {value:6.1%}  {case_id}")
    skipped = len(cases) - len(thresholds)
    if skipped:
        print(f"{skipped} case(s) were not ok in both runs and got no threshold", file=sys.stderr)
    return 0
