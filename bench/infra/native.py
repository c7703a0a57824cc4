"""A server's own listener for a protocol it speaks natively (its manifest's `protocols`,
bench.core.protocols): the case is measured on it directly, without a terminating proxy.

The server is asked for it by environment (servers/README.md): besides HTTP/1.1 on
BENCH_PORT, which readiness, the census and the start-up figures keep using,

- BENCH_TLS_PORT with BENCH_TLS_CERT and BENCH_TLS_KEY: a TLS listener (TLS 1.3, the
  run's certificate) offering by ALPN what the server speaks over TLS (h2, http/1.1);
- BENCH_H2C_PORT: a plain listener speaking HTTP/2 with prior knowledge.

A measured start puts the asked listener on the case's port (where the load and a proxy's
clients go) and HTTP/1.1 on the upstream port, the layout of a proxied start; an idle
second listener costs the server nothing the load sees. The listener is ready when GET
/ping/ over the case's protocol answers what HTTP/1.1 answers and negotiated that protocol,
the run's TLS version and its cipher suite; anything else fails the start with why: a
server never falls back silently to another protocol.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from bench.core import protocols
from bench.infra import protocol_probe
from bench.infra.seam import HttpUnanswered
from bench.infra.server import ServerError

# where verification asks for a server's own listeners, next to its port (the upstream
# port is the terminating proxy's there; +2 is the pipelining relay's)
VERIFY_TLS_OFFSET = 3
VERIFY_H2C_OFFSET = 4
READY_TIMEOUT_S = 10.0


def listener_env(protocol: str, port: int, tls=None) -> dict[str, str]:
    """The environment that asks a server for its own `protocol` listener on `port`."""
    if protocol in protocols.TLS:
        if tls is None:
            raise ValueError(f"{protocol} needs the run's certificates")
        return {"BENCH_TLS_PORT": str(port), "BENCH_TLS_CERT": str(tls.cert),
                "BENCH_TLS_KEY": str(tls.key)}
    if protocol == "h2c":
        return {"BENCH_H2C_PORT": str(port)}
    raise ValueError(f"no listener of its own for {protocol}")


def verification_listeners(spec, asked, port: int, tls) -> tuple[dict[str, str], dict[str, int]]:
    """Verification's one start with every listener of its own the server has among the
    `asked` protocols, beside HTTP/1.1 on `port`: (environment, protocol -> port).
    Over TLS one listener serves h1-tls and h2 alike (ALPN tells them apart)."""
    env: dict[str, str] = {}
    ports: dict[str, int] = {}
    for protocol in asked:
        if protocol == protocols.DEFAULT or not spec.speaks(protocol):
            continue
        ports[protocol] = port + (VERIFY_TLS_OFFSET if protocol in protocols.TLS
                                  else VERIFY_H2C_OFFSET)
        env.update(listener_env(protocol, ports[protocol], tls))
    return env, ports


def url(host: str, port: int, protocol: str) -> str:
    where = f"[{host}]" if ":" in host else host
    return f"{protocols.scheme(protocol)}://{where}:{port}"


@dataclass
class NativeListener:
    """A server's ready listener for `protocol`, and what its probe negotiated."""
    protocol: str
    base_url: str
    port: int
    negotiated: dict


def wait_listening(server, protocol: str, host: str, port: int, tls,
                   timeout: float = READY_TIMEOUT_S) -> NativeListener:
    """Until `server` (a ready ServerProcess) answers GET /ping/ at host:port over
    `protocol` exactly as over HTTP/1.1; ServerError when it negotiates anything else,
    exits, or does not answer within `timeout`."""
    base_url = url(host, port, protocol)
    try:
        plain = server.host.http_get(f"{server.base_url}/ping/", timeout=2)
        expected = (plain.status, plain.json())
    except (HttpUnanswered, ValueError) as exc:
        raise ServerError(f"{server.spec.id} stopped answering GET /ping/ over HTTP/1.1 "
                          f"before its {protocol} listener was checked: {exc}") from None
    ca = tls.ca if tls is not None else None
    deadline, last = time.monotonic() + timeout, "no answer"
    while time.monotonic() < deadline:
        if not server.alive():
            raise ServerError(f"{server.spec.id} exited before its own {protocol} listener "
                              f"at {base_url} answered", server.log_path)
        try:
            answer = protocol_probe.get(f"{base_url}/ping/", protocol, ca=ca, timeout=1)
        except protocol_probe.ProtocolError as exc:
            if exc.wrong_protocol:
                raise ServerError(f"{server.spec.id}'s own listener at {base_url} does not "
                                  f"speak {protocol}, which its manifest's protocols say: "
                                  f"{exc}", server.log_path) from None
            if exc.bad_certificate:
                raise ServerError(f"{server.spec.id}'s own listener at {base_url} presented "
                                  f"a certificate that failed verification: {exc}",
                                  server.log_path) from None
            last = str(exc)
            time.sleep(0.05)
            continue
        wrong = answer.problems(protocol)
        if wrong:
            raise ServerError(f"{server.spec.id}'s own listener at {base_url} answered "
                              f"--protocol {protocol} but {'; '.join(wrong)}", server.log_path)
        if (answer.status, answer.body) == expected:
            return NativeListener(protocol, base_url, port, answer.negotiated())
        last = f"HTTP {answer.status} {str(answer.body)[:80]!r}"
        time.sleep(0.05)
    raise ServerError(f"{server.spec.id} declares {protocol} (its manifest's protocols) but "
                      f"its own listener at {base_url} did not answer GET /ping/ like its "
                      f"HTTP/1.1 one within {timeout:.0f} s (last: {last})", server.log_path)
