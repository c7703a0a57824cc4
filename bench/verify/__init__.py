"""Verification of a started server: its workers (`workers`), the contract over HTTP
(`contract`), statements per request (`querycount`), the DB connections it holds
(`connections`), commands it pipelines to its database (`pipelining`, a relay) and how
well it speaks HTTP/1.1 (`conformance`, directly and through each `--behind` proxy)."""
from __future__ import annotations

from contextlib import ExitStack, contextmanager
from typing import Callable

from bench.core.workloads import WEBSOCKET_TEST, supported_encodings


def exempt(report, exemptions: dict) -> None:
    """A reference server's failed checks that its manifest exempts, with the reason,
    become warnings: shown in the report, never silently passed."""
    for check in report.checks:
        if not check.passed and check.name in exemptions:
            check.severity = "warning"
            check.detail = f"exempt ({exemptions[check.name]}): {check.detail}"


def verifier(token: str, suite: bool = False, relay=None, mix=None,
             pipeline: int | None = None, tests=(), compression=()) -> Callable:
    """A check for `running_server`: verify the started server, one report. `suite`: the
    database suite's checks too, for a server that declares it (a run verifies what it
    will measure: the suite's checks only when a suite test is selected). `relay`: the
    pipelining relay the server reaches its database through (`verified_server`); the
    harness's own statements go to the database directly. `mix` (bench.core.mix.Mix):
    the mixed test's counted burst too, for a variant with a database. `pipeline`: the
    pipelined test's batch at that depth too, and `tests`' HTTP workloads (static,
    upload, delay: bench.verify.workloads) the server does not declare unsupported, for a
    variant without one; `compression`'s encodings on a server started with it on."""
    from bench.verify.connections import check_connections
    from bench.verify.contract import guarded, verify_server
    from bench.verify.workers import check_workers

    def check(server):
        v = server.variant
        if relay is not None:
            # the window starts when the server answers: what a driver sends while the
            # pool opens (diesel-async's two SETs per new PostgreSQL connection, sent
            # together) is set-up, once per connection, not the per-request work the
            # pipelining check is about
            relay.reset()
        endpoint = relay.upstream if relay is not None else server.endpoint
        workers = guarded("workers", lambda: [check_workers(server)])
        conformance = begin(server.base_url, token)
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
        if mix is not None and endpoint is not None:
            from bench.verify.mix_counts import CHECK, check_mix
            report.checks += guarded(CHECK, lambda: check_mix(
                server.base_url, token=token, endpoint=endpoint, mix=mix, orm=v.orm,
                declaration=declaration, report=report))
        if pipeline is not None and endpoint is None:
            from bench.verify.pipelined import CHECK, check_pipelined
            report.checks += guarded(CHECK, lambda: check_pipelined(
                server.base_url, token, pipeline, timeout=5.0))
        asked = [t for t in tests if t not in v.server.unsupported]
        if endpoint is None and asked:
            from bench.verify.workloads import verify_workloads
            report.checks += guarded("HTTP workloads", lambda: verify_workloads(
                server.base_url, token, asked))
        if endpoint is None and WEBSOCKET_TEST in asked:
            from bench.verify.websocket import verify_websocket, ws_url
            report.checks += guarded("websocket", lambda: verify_websocket(
                ws_url(server.base_url), token))
        if endpoint is None and server.compression:
            from bench.verify.compression import CHECK, check_compression
            report.checks += guarded(CHECK, lambda: check_compression(
                server.base_url, token,
                supported_encodings(compression, v.server.unsupported)))
        exempt(report, v.server.exemptions)
        if server.endpoint is not None:
            def connections():
                found, report.connections = check_connections(server)
                return [found]
            report.checks += guarded("DB connections", connections)
        report.conformance["none"] = conformance()
        return report
    return check


def begin(base_url: str, token: str) -> Callable[[], dict]:
    """HTTP conformance of the endpoint at base_url, begun now (bench.verify.conformance.
    begin_conformance) and finished by the function returned; a harness-side error makes
    every check not applicable, saying so (a block of warnings never stops a run)."""
    from bench.core.conformance import CHECKS, NOT_APPLICABLE
    from bench.verify.conformance import begin_conformance, verdict

    def unjudged(exc: Exception) -> dict:
        why = f"harness error: {type(exc).__name__}: {str(exc)[:200]}"
        return {name: verdict(NOT_APPLICABLE, why) for name in CHECKS}
    try:
        finish = begin_conformance(base_url, token)
    except Exception as exc:  # noqa: BLE001
        return lambda exc=exc: unjudged(exc)

    def finished() -> dict:
        try:
            return finish()
        except Exception as exc:  # noqa: BLE001
            return unjudged(exc)
    return finished


def check_behind(running, proxies: dict, settings, token: str, host, log_path,
                 websocket: bool = False) -> None:
    """HTTP conformance through each proxy the run puts in front of the server: the
    proxy starts on the upstream port (free while verifying) in front of the verified
    server, and is stopped again. A proxy that does not start leaves every check of
    its block not applicable, with the reason. `websocket`: the websocket checks through
    each proxy too (a check of the report each: a proxy that does not carry WebSocket
    fails the server's verification for that point)."""
    from bench.core.conformance import CHECKS, NOT_APPLICABLE
    from bench.infra.proxy import running_proxy
    from bench.infra.server import ServerError
    from bench.verify.conformance import verdict
    for name, spec in proxies.items():
        try:
            with running_proxy(spec, listen_host=settings.host, listen_port=settings.upstream_port,
                               upstream_host=settings.host, upstream_port=settings.port,
                               workers=settings.workers, log_path=log_path,
                               cpus=settings.cpus("server"), host=host) as proxy:
                running.verification.conformance[name] = begin(proxy.base_url, token)()
                if websocket:
                    from bench.verify.websocket import endpoint_check
                    running.verification.checks.append(endpoint_check(
                        f"websocket through {name}", proxy.base_url, token))
        except ServerError as exc:
            why = f"the {name} proxy did not start: {str(exc)[:200]}"
            running.verification.conformance[name] = {c: verdict(NOT_APPLICABLE, why)
                                                      for c in CHECKS}


@contextmanager
def verified_server(variant, settings, endpoint, log_path, *, token: str, suite: bool,
                    mix=None, pipeline: int | None = None, tests=(), compression=(),
                    host=None, proxies: dict | None = None, protocols: tuple = (),
                    edge=None, tls=None, h2spec_seen: dict | None = None, **kwargs):
    """A server started and verified, for verification only (a run measures in a start
    of its own, so that what verification sends never warms what is measured). With the
    database suite, the server reaches its database through a `pipelining.Relay`, which
    sees statements sent before the previous answer came back; not where the server runs
    on another host (it could not reach the relay on this one). `proxies` (name ->
    ProxySpec, a run's `--behind`): HTTP conformance is checked through each as well.
    `protocols` besides h1 (a run's `--protocol`): the contract's answers through `edge`,
    the proxy that terminates each, with the run's certificates `tls`
    (bench.verify.protocol_checks), or the server's own listener of those it speaks
    itself; h2spec's verdicts the run has already, per proxy and HTTP/2 protocol, in
    `h2spec_seen`."""
    from bench.infra import native
    from bench.infra.certs import on_host
    from bench.infra.host import LOCAL
    from bench.infra.lifecycle import running_server
    host = host or LOCAL
    with ExitStack() as stack:
        relay = None
        if suite and endpoint is not None and not host.remote \
                and variant.server.declaration(variant.database, variant.orm) is not None:
            from bench.verify.pipelining import Relay
            relay = stack.enter_context(Relay(endpoint, port=settings.relay_port))
        # the server's own listeners of the protocols it speaks (bench.infra.native),
        # asked for in this one start beside HTTP/1.1
        listeners, own_ports = ({}, {}) if edge is None else native.verification_listeners(
            variant.server, protocols, settings.port,
            on_host(tls, host) if tls is not None else None)
        running = stack.enter_context(running_server(
            variant, settings, relay.endpoint if relay else endpoint, log_path,
            verifier=verifier(token, suite, relay, mix, pipeline, tests, compression),
            compression=variant.database == "none" and bool(supported_encodings(
                compression, variant.server.unsupported)), host=host, listeners=listeners,
            **kwargs))
        websocket = variant.database == "none" and WEBSOCKET_TEST in tests \
            and WEBSOCKET_TEST not in variant.server.unsupported
        if proxies and running.verification is not None:
            check_behind(running, proxies, settings, token, host, log_path, websocket)
        if edge is not None and running.verification is not None:
            from bench.verify.protocol_checks import check_protocols
            running.verification.checks += check_protocols(
                running, edge, list(protocols), settings, token, host, log_path, tls,
                h2spec_seen, own_ports, websocket)
        yield running
