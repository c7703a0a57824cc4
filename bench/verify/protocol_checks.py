"""Verification over each protocol a run's cases use (`--protocol`): the verified
server behind the proxy that terminates the protocol (bench.core.protocols), started on
the upstream port as `check_behind` starts a `--behind` proxy. One check per protocol:

- the proxy is ready over that protocol and negotiated it (HTTP version, ALPN, the run's
  TLS version and cipher suite: bench.infra.protocol_probe);
- the contract's GET requests answer through it what the server answers directly over
  HTTP/1.1 (status and JSON body): plain, to json, a user by id on a database, a request
  without the token (401) and an unknown path (404).

A failure is an error of verification, so a protocol that changes an answer or falls
back silently never reaches the load.
"""
from __future__ import annotations

from bench.core import protocols
from bench.infra import protocol_probe
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


def check_protocols(running, edge, asked: list[str], settings, token: str, host, log_path,
                    tls) -> list[Check]:
    """One Check per protocol besides h1 in `asked`, through the proxy spec `edge`."""
    from bench.infra.proxy import running_proxy
    from bench.infra.server import ServerError
    checks = []
    server = running.server
    for protocol in [p for p in asked if p != protocols.DEFAULT]:
        name = f"protocol {protocol}"
        try:
            with running_proxy(edge, listen_host=settings.host,
                               listen_port=settings.upstream_port, upstream_host=settings.host,
                               upstream_port=settings.port, workers=settings.workers,
                               log_path=log_path, cpus=settings.cpus("server"), host=host,
                               protocol=protocol,
                               tls=tls if protocol in protocols.TLS else None) as proxy:
                wrong = compare(server.base_url, proxy.base_url, protocol, token,
                                tls.ca if tls is not None else None,
                                server.variant.database)
                seen = proxy.negotiated or {}
        except (ServerError, protocol_probe.ProtocolError) as exc:
            checks.append(Check(name, False, f"through the {edge.name} proxy: {str(exc)[:300]}"))
            continue
        said = ", ".join(f"{k} {v}" for k, v in seen.items() if v)
        checks.append(Check(name, not wrong, (
            f"through the {edge.name} proxy ({said}): "
            + ("; ".join(wrong[:3]) if wrong else
               f"{len(requests_for(server.variant.database))} contract requests answered "
               f"as directly"))))
    return checks
