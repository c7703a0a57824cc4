"""Verification of a started server: its workers (`workers`), the contract over HTTP
(`contract`), statements per request (`querycount`), the DB connections it holds
(`connections`) and commands it pipelines to its database (`pipelining`, a relay)."""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Callable


def exempt(report, exemptions: dict) -> None:
    """A reference server's failed checks that its manifest exempts, with the reason,
    become warnings: shown in the report, never silently passed."""
    for check in report.checks:
        if not check.passed and check.name in exemptions:
            check.severity = "warning"
            check.detail = f"exempt ({exemptions[check.name]}): {check.detail}"


def verifier(token: str, suite: bool = False, relay=None) -> Callable:
    """A check for `running_server`: verify the started server, one report. `suite`: the
    database suite's checks too, for a server that declares it (a run verifies what it
    will measure: the suite's checks only when a suite test is selected). `relay`: the
    pipelining relay the server reaches its database through (`verified_server`); the
    harness's own statements go to the database directly."""
    from bench.verify.connections import check_connections
    from bench.verify.contract import guarded, verify_server
    from bench.verify.workers import check_workers

    def check(server):
        v = server.variant
        endpoint = relay.upstream if relay is not None else server.endpoint
        workers = guarded("workers", lambda: [check_workers(server)])
        report = verify_server(server.base_url, server_id=v.server.id, database=v.database,
                               orm=v.orm, token=token, endpoint=endpoint)
        report.checks[:0] = workers
        declaration = v.server.declaration(v.database, v.orm)
        if suite and endpoint is not None and declaration is not None:
            from bench.verify.suite import pipelining_check, verify_suite
            report.checks += verify_suite(
                server.base_url, token=token, endpoint=endpoint,
                declaration=declaration, processes=server.budget.processes, report=report)
            report.checks.append(pipelining_check(relay, declaration, report))
        exempt(report, v.server.exemptions)
        if server.endpoint is not None:
            def connections():
                found, report.connections = check_connections(server)
                return [found]
            report.checks += guarded("DB connections", connections)
        return report
    return check


@contextmanager
def verified_server(variant, settings, endpoint, log_path, *, token: str, suite: bool,
                    host=None, **kwargs):
    """A server started and verified, for verification only (a run measures in a start
    of its own, so that what verification sends never warms what is measured). With the
    database suite, the server reaches its database through a `pipelining.Relay`, which
    sees statements sent before the previous answer came back; not where the server runs
    on another host (it could not reach the relay on this one)."""
    from bench.infra.host import LOCAL
    from bench.infra.lifecycle import running_server
    host = host or LOCAL
    with ExitStack() as stack:
        relay = None
        if suite and endpoint is not None and not host.remote \
                and variant.server.declaration(variant.database, variant.orm) is not None:
            from bench.verify.pipelining import Relay
            relay = stack.enter_context(Relay(endpoint, port=settings.relay_port))
        running = stack.enter_context(running_server(
            variant, settings, relay.endpoint if relay else endpoint, log_path,
            verifier=verifier(token, suite, relay), host=host, **kwargs))
        yield running
