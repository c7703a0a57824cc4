"""Verification of a started server: its workers (`workers`), the contract over HTTP
(`contract`), statements per request (`querycount`), the DB connections it holds
(`connections`) and commands it pipelines to its database (`pipelining`, a relay)."""
from __future__ import annotations

from typing import Callable


def exempt(report, exemptions: dict) -> None:
    """A reference server's failed checks that its manifest exempts, with the reason,
    become warnings: shown in the report, never silently passed."""
    for check in report.checks:
        if not check.passed and check.name in exemptions:
            check.severity = "warning"
            check.detail = f"exempt ({exemptions[check.name]}): {check.detail}"


def verifier(token: str, suite: bool = False) -> Callable:
    """A check for `running_server`: verify the started server, one report. `suite`: the
    database suite's checks too, for a server that declares it (a run verifies what it
    will measure: the suite's checks only when a suite test is selected)."""
    from bench.verify.connections import check_connections
    from bench.verify.contract import guarded, verify_server
    from bench.verify.workers import check_workers

    def check(server):
        v = server.variant
        workers = guarded("workers", lambda: [check_workers(server)])
        report = verify_server(server.base_url, server_id=v.server.id, database=v.database,
                               orm=v.orm, token=token, endpoint=server.endpoint)
        report.checks[:0] = workers
        declaration = v.server.declaration(v.database, v.orm)
        if suite and server.endpoint is not None and declaration is not None:
            from bench.verify.suite import verify_suite
            report.checks += verify_suite(
                server.base_url, token=token, endpoint=server.endpoint,
                declaration=declaration, processes=server.budget.processes, report=report)
        exempt(report, v.server.exemptions)
        if server.endpoint is not None:
            def connections():
                found, report.connections = check_connections(server)
                return [found]
            report.checks += guarded("DB connections", connections)
        return report
    return check
