"""`run_bench.py verify`: check the selected server variants against the contract, no load.

Reports go to results/verify-<run id>/verification.json and verification.txt.
"""
from __future__ import annotations

import dataclasses
import json

from bench.core import protocols
from bench.core.manifest import ServerSpec
from bench.core.plan import plan
from bench.core.settings import NO_PROXY, SelectionError, Settings
from bench.infra import certs
from bench.infra.server import ServerError
from bench.session import FOR_VERIFY, Session, check_proxies, servers_unavailable
from bench.storage import results
from bench.verify import verified_server


def verify_selection(settings: Settings, specs: dict[str, ServerSpec], hosts=None) -> int:
    from bench.infra.proxy import available_proxies
    found = available_proxies()
    # --protocol: checked over each through the proxy below; the plan's cases (which
    # variants to verify) are its h1 ones, and no test is measured, so every test may go
    # with every protocol (a run refuses update user over HTTP/2: h2load cannot send it)
    wrong = protocols.problems(settings.protocols, [], [], settings.behind,
                               {name: spec.protocols for name, spec in found.items()},
                               settings.tls_proxy, [1])
    if wrong:
        raise SelectionError(wrong[0])
    cases = plan(dataclasses.replace(settings, protocols=(protocols.DEFAULT,)), specs,
                 list(found), unavailable=servers_unavailable(specs, hosts))
    check_proxies(settings, found, hosts)
    proxies = {name: found[name] for name in settings.behind if name != NO_PROXY}
    others = tuple(p for p in settings.protocols if p != protocols.DEFAULT)
    variants = list(dict.fromkeys(c.variant for c in cases))
    if not variants:
        raise SelectionError("the selection matches no server variant")
    run_dir = settings.results_dir / f"verify-{results.new_run_id()}"
    reports: dict[str, dict] = {}
    with Session(settings, cases, hosts=hosts, needs=FOR_VERIFY) as session:
        run_dir.mkdir(parents=True, exist_ok=True)
        try:
            endpoints = session.start_databases()
            over = {}
            if others:       # --protocol: the contract through the terminating proxy too
                tls = certs.for_clients(run_dir / "tls", settings.host, session.launch.host) \
                    if any(p in protocols.TLS for p in others) else None
                over = {"protocols": others, "edge": found[settings.tls_proxy], "tls": tls,
                        "h2spec_seen": {}}       # h2spec once per proxy and protocol
            unbuilt = {sid: built.reason for sid, built in
                       session.builds([*{v.server.id: v.server for v in variants}.values(),
                                       *proxies.values()], run_dir) if not built.ok}
            for v in variants:
                if v.server.id in unbuilt:
                    reports[v.key] = {"passed": False,
                                      "reason": f"did not build: {unbuilt[v.server.id]}"}
                    print(f"{v.key}: FAILED to build\n", flush=True)
                    continue
                log = run_dir / f"{v.key.replace('/', '__')}.log"
                try:
                    with verified_server(v, session.launch, endpoints.get(v.database), log,
                                         token=settings.token, suite=settings.with_suite,
                                         mix=settings.active_mix,
                                         pipeline=settings.pipelined_depth,
                                         tests=settings.tests,
                                         compression=settings.compression,
                                         host=session.host("server"),
                                         proxies=proxies, **over) as running:
                        report = running.verification
                    reports[v.key] = report.to_dict()
                    print(report.summary_text() + "\n", flush=True)
                except ServerError as exc:
                    reports[v.key] = {"passed": False, "reason": f"did not start: {exc}"}
                    print(f"{v.key}: FAILED to start: {exc}\n", flush=True)
        except KeyboardInterrupt:
            print("\ninterrupted: reports so far are kept")
        finally:
            write_reports(run_dir, reports)
    failed = [k for k, r in reports.items() if not r["passed"]]
    print(f"{len(reports) - len(failed)} of {len(variants)} variants passed; "
          f"report: {run_dir / 'verification.json'}")
    for key in failed:
        print(f"  FAILED {key}: {reports[key]['reason']}")
    return 0 if not failed and len(reports) == len(variants) else 1


def write_reports(run_dir, reports: dict[str, dict]) -> None:
    (run_dir / "verification.json").write_text(json.dumps(reports, indent=2, default=str) + "\n")
    with open(run_dir / results.VERIFICATION_REPORT, "w") as f:
        f.write("\n".join(f"{k}: {'passed' if r['passed'] else 'FAILED: ' + r['reason']}"
                          for k, r in reports.items()) + "\n")
