"""`run_bench.py verify`: check the selected server variants against the contract, no load.

Reports go to results/verify-<run id>/verification.json and verification.txt.
"""
from __future__ import annotations

import json

from bench.core.manifest import ServerSpec
from bench.core.plan import databases_needed, plan
from bench.core.settings import SelectionError, Settings
from bench.infra import databases
from bench.infra.lifecycle import running_server
from bench.infra.server import ServerError, build
from bench.infra.signals import sigterm_as_interrupt
from bench.setup import toolchains
from bench.storage import results
from bench.verify import verifier


def verify_selection(settings: Settings, specs: dict[str, ServerSpec]) -> int:
    cases = plan(settings, specs, unavailable=toolchains.unavailable(specs))
    variants = list(dict.fromkeys(c.variant for c in cases))
    if not variants:
        raise SelectionError("the selection matches no server variant")
    run_dir = settings.results_dir / f"verify-{results.new_run_id()}"
    run_dir.mkdir(parents=True, exist_ok=True)
    reports: dict[str, dict] = {}
    engines = databases_needed(cases)
    provider = databases.for_settings(settings, engines) if engines else None
    try:
        with sigterm_as_interrupt():
            endpoints = provider.start() if provider else {}
            for spec in {v.server.id: v.server for v in variants}.values():
                if spec.build:
                    print(f"building {spec.id} ...", flush=True)
                    build(spec, settings, run_dir / f"build-{spec.id}.log")
            for v in variants:
                log = run_dir / f"{v.key.replace('/', '__')}.log"
                try:
                    with running_server(v, settings, endpoints.get(v.database), log,
                                        verifier=verifier(settings.token)) as running:
                        report = running.verification
                    reports[v.key] = report.to_dict()
                    print(report.summary_text() + "\n", flush=True)
                except ServerError as exc:
                    reports[v.key] = {"passed": False, "reason": f"did not start: {exc}"}
                    print(f"{v.key}: FAILED to start: {exc}\n", flush=True)
    except KeyboardInterrupt:
        print("\ninterrupted: reports so far are kept")
    finally:
        if provider:
            provider.stop()
        (run_dir / "verification.json").write_text(json.dumps(reports, indent=2, default=str) + "\n")
        with open(run_dir / "verification.txt", "w") as f:
            f.write("\n".join(f"{k}: {'passed' if r['passed'] else 'FAILED: ' + r['reason']}"
                              for k, r in reports.items()) + "\n")
    failed = [k for k, r in reports.items() if not r["passed"]]
    print(f"{len(reports) - len(failed)} of {len(variants)} variants passed; "
          f"report: {run_dir / 'verification.json'}")
    for key in failed:
        print(f"  FAILED {key}: {reports[key]['reason']}")
    return 0 if not failed and len(reports) == len(variants) else 1
