"""`run_bench.py verify`: check the selected server variants against the contract, no load.

Reports go to results/verify-<run id>/verification.json and verification.txt.
"""
from __future__ import annotations

import json

from bench import config, db, lifecycle, provision, results, verify
from bench.config import Settings
from bench.manifest import ServerSpec


def verify_selection(settings: Settings, specs: dict[str, ServerSpec]) -> int:
    cases = config.plan(settings, specs)
    variants = list(dict.fromkeys(c.variant for c in cases))
    if not variants:
        raise config.SelectionError("the selection matches no server variant")
    run_dir = settings.results_dir / f"verify-{results.new_run_id()}"
    run_dir.mkdir(parents=True, exist_ok=True)
    reports: dict[str, dict] = {}
    engines = config.databases_needed(cases)
    provider = provision.provider(settings.db_mode, engines,
                                  ports={"postgres": settings.pg_port, "mysql": settings.mysql_port},
                                  dsns={"postgres": settings.postgres_dsn,
                                        "mysql": settings.mysql_dsn},
                                  keep=settings.keep_db) if engines else None
    try:
        with lifecycle.sigterm_as_interrupt():
            endpoints = provider.start() if provider else {}
            for spec in {v.server.id: v.server for v in variants}.values():
                if spec.build:
                    print(f"building {spec.id} ...", flush=True)
                    lifecycle.build(spec, settings, run_dir / f"build-{spec.id}.log")
            for v in variants:
                endpoint = endpoints.get(v.database)
                if endpoint:
                    db.restore(endpoint)
                log = run_dir / f"{v.key.replace('/', '__')}.log"
                server = lifecycle.ServerProcess(v, settings, endpoint, log)
                try:
                    server.start()
                    server.wait_ready()
                    report = verify.verify_server(server.base_url, server_id=v.server.id,
                                                  database=v.database, orm=v.orm,
                                                  token=settings.token, endpoint=endpoint)
                    reports[v.key] = report.to_dict()
                    print(report.summary_text() + "\n", flush=True)
                except lifecycle.ServerError as exc:
                    reports[v.key] = {"passed": False, "reason": f"did not start: {exc}"}
                    print(f"{v.key}: FAILED to start: {exc}\n", flush=True)
                finally:
                    server.stop()
    except KeyboardInterrupt:
        print("\ninterrupted: reports so far are kept")
    finally:
        if provider:
            provider.stop()
        (run_dir / "verification.json").write_text(json.dumps(reports, indent=2, default=str) + "\n")
    failed = [k for k, r in reports.items() if not r["passed"]]
    print(f"{len(reports) - len(failed)} of {len(variants)} variants passed; "
          f"report: {run_dir / 'verification.json'}")
    for key in failed:
        print(f"  FAILED {key}: {reports[key]['reason']}")
    return 0 if not failed and len(reports) == len(variants) else 1
