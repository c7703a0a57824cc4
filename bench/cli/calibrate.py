"""`run_bench.py calibrate [run options]`: run the same selection twice (A/A) and store,
beside this machine's results, how much each case moves by noise alone; `compare` then
uses those per-case thresholds instead of one global one."""
from __future__ import annotations

import sys

from bench.analysis import compare
from bench.core.plan import plan
from bench.core.settings import Settings
from bench.setup import toolchains
from bench.storage import calibration


def calibrate(settings: Settings, specs: dict) -> int:
    from bench.runner import Run
    unavailable = toolchains.unavailable(specs)
    cases = plan(settings, specs, unavailable=unavailable)
    docs = []
    for attempt in (1, 2):
        print(f"calibration run {attempt} of 2", flush=True)
        doc = Run(settings, cases, unavailable=unavailable if not settings.servers else {}) \
            .execute()
        if doc["status"] != "complete":
            print(f"calibration stopped: run {doc['run_id']} is {doc['status']}", file=sys.stderr)
            return 130 if doc["status"] == "interrupted" else 1
        docs.append(doc)
        settings.order_seed = None          # the second run gets an order of its own
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
