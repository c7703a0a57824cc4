"""Verification over each protocol a run's cases use (`--protocol`): the verified
server's own listener of a protocol its manifest says it speaks (bench.infra.native), or
else the proxy that terminates the protocol (bench.core.protocols), started on the
upstream port as `check_behind` starts a `--behind` proxy. One check per protocol:

- the endpoint is ready over that protocol and negotiated it (HTTP version, ALPN, the
  run's TLS version and cipher suite: bench.infra.protocol_probe);
- the contract's GET requests answer through it what the server answers directly over
  HTTP/1.1 (status and JSON body): plain, to json, a user by id on a database, a request
  without the token (401) and an unknown path (404);
- over TLS, a warning check besides: a handshake offering by ALPN only a protocol nobody
  speaks is refused with the no_application_protocol alert (RFC 7301 §3.2).

A failure is an error of verification, so a protocol that changes an answer or falls
back silently never reaches the load. Over HTTP/2, h2spec's conformance suite runs
against the same endpoint (bench.verify.h2spec): a warning kept with the HTTP/1.1
conformance verdicts, under "<proxy>@h2" (bench.core.conformance.endpoint), once per
proxy and protocol in a run (`h2spec_seen`): what it tests is the proxy's HTTP/2, the same
whichever server is behind it; a server's own HTTP/2 under "none@h2", once per server.
"""
from __future__ import annotations

from contextlib import ExitStack
from urllib.parse import urlsplit

from bench.core import protocols
from bench.core.conformance import NOT_APPLICABLE, endpoint
from bench.core.settings import NO_PROXY
from bench.infra import protocol_probe
from bench.verify import h2spec
from bench.verify.checks import Check

PLAIN = "/plain/?param1=a&param2=b%20c&param3=d"
REQUESTS = [(PLAIN, True), ("/to_json/?param1=x&param2=y&param3=z", True),
            (PLAIN, False), ("/no/such/route/", True)]


def requests_for(database: str) -> list[tuple[str, bool]]:
    return REQUESTS + ([("/user/1/", True), ("/user/10000/", True)] if database != "none" else [])


def compare(direct_url: str, edge_url: str, protocol: str, token: str, ca,
            database: str) -> list[str]:
    """The requests whose answers through the edge differ from the direct ones."""
    out = []
    for path, with_token in requests_for(database):
        headers = {"token": token} if with_token else {}
        want = protocol_probe.get(direct_url + path, "h1", ca=None, headers=headers)
        got = protocol_probe.get(edge_url + path, protocol, ca=ca, headers=headers)
        if (got.status, got.body) != (want.status, want.body):
            out.append(f"GET {path}{'' if with_token else ' (no token)'}: {got.status} "
                       f"{str(got.body)[:80]!r} over {protocol}, {want.status} "
                       f"{str(want.body)[:80]!r} directly")
        out += [f"GET {path}: {p}" for p in got.problems(protocol)]
    return out


def h2spec_verdict(base_url: str, where_name: str, protocol: str, seen: dict | None) -> dict:
    """h2spec against the endpoint at `base_url` over `protocol` (h2 or h2c), or the
    verdict this run already has for that endpoint (`where_name`: a proxy's name, or a
    server's label for its own listener) and protocol in `seen`."""
    key = (where_name, protocol)
    if seen is not None and key in seen:
        return seen[key]
    where = f"{where_name} over {protocol}"
    try:
        url = urlsplit(base_url)
        result = h2spec.run(h2spec.binary(), url.hostname, url.port,
                            tls=protocol in protocols.TLS)
        verdict = result.verdict(where)
    except h2spec.H2specError as exc:
        verdict = {"verdict": NOT_APPLICABLE, "detail": f"h2spec against {where}: {exc}"}
    if seen is not None:
        seen[key] = verdict
    return verdict


def check_protocols(running, edge, asked: list[str], settings, token: str, host, log_path,
                    tls, h2spec_seen: dict | None = None,
                    own_ports: dict[str, int] | None = None,
                    websocket: bool = False) -> list[Check]:
    """One Check per protocol besides h1 in `asked`: on the server's own listener where
    it speaks the protocol itself (`own_ports`: protocol -> the port verification asked
    it to listen on, bench.infra.native), else through the proxy spec `edge`; over
    HTTP/2, h2spec's verdict into the report's conformance. `websocket`: over h1-tls, the
    websocket checks there too (wss), as a check of its own."""
    from bench.infra.proxy import running_proxy
    from bench.infra.server import ServerError
    checks = []
    server = running.server
    own_ports = own_ports or {}
    for protocol in [p for p in asked if p != protocols.DEFAULT]:
        name = f"protocol {protocol}"
        own = protocol in own_ports
        what = "on its own listener" if own else f"through the {edge.name} proxy"
        try:
            with ExitStack() as stack:
                if own:
                    from bench.infra import native
                    url = native.wait_listening(server, protocol, settings.host,
                                                own_ports[protocol], tls)
                    endpoint_url, seen, where = url.base_url, url.negotiated, \
                        server.spec.label
                else:
                    proxy = stack.enter_context(running_proxy(
                        edge, listen_host=settings.host, listen_port=settings.upstream_port,
                        upstream_host=settings.host, upstream_port=settings.port,
                        workers=settings.workers, log_path=log_path,
                        cpus=settings.cpus("server"), host=host, protocol=protocol,
                        tls=tls if protocol in protocols.TLS else None))
                    endpoint_url, seen, where = proxy.base_url, proxy.negotiated or {}, \
                        edge.name
                wrong = compare(server.base_url, endpoint_url, protocol, token,
                                tls.ca if tls is not None else None,
                                server.variant.database)
                refused = protocol_probe.alpn_refusal(endpoint_url, tls.ca) \
                    if protocol in protocols.TLS else None
                if websocket and protocol == "h1-tls":
                    from bench.verify.websocket import endpoint_check
                    checks.append(endpoint_check(f"websocket over {protocol} ({what})",
                                                 endpoint_url, token, tls.ca))
                if protocol in protocols.HTTP2:
                    # the server's own endpoint is the direct one ("none@h2")
                    running.verification.conformance[
                        endpoint(NO_PROXY if own else edge.name, protocol)] = \
                        {h2spec.CHECK: h2spec_verdict(endpoint_url, where, protocol,
                                                      h2spec_seen)}
        except (ServerError, protocol_probe.ProtocolError) as exc:
            checks.append(Check(name, False, f"{what}: {str(exc)[:300]}"))
            continue
        if refused is not None:          # a warning, like HTTP conformance
            checks.append(Check(f"{name}: ALPN refusal", refused[0],
                                f"{where}: {refused[1]}", severity="warning"))
        said = ", ".join(f"{k} {v}" for k, v in seen.items() if v)
        checks.append(Check(name, not wrong, (
            f"{what} ({said}): "
            + ("; ".join(wrong[:3]) if wrong else
               f"{len(requests_for(server.variant.database))} contract requests answered "
               f"as directly over HTTP/1.1"))))
    return checks
