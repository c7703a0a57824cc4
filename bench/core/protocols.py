"""The protocol a case's clients speak (`--protocol h1,h1-tls,h2,h2c`): a dimension of
the load, like the connection mode. Pure: names, what each needs, which generator runs
it, what a run may combine.

- h1: HTTP/1.1 over TCP, the default (case ids and keys stay as they were).
- h1-tls: HTTP/1.1 over TLS 1.3 (wrk, or oha and k6 trusting the run's CA).
- h2: HTTP/2 over TLS 1.3, negotiated by ALPN (h2load, `-m` streams per connection).
- h2c: HTTP/2 over TCP with prior knowledge (h2load).

A server whose manifest lists a protocol (`protocols`, ServerSpec.speaks) is measured over
it directly, on a listener of its own (bench.infra.native); one that does not is measured
through the terminating proxy (`--tls-proxy`, nginx by default), as it runs in
production, and its rows say so (the case's proxy). A `--behind` proxy terminates the
protocol whatever the server speaks (bench.core.plan.server_point).
"""
from __future__ import annotations

PROTOCOLS = ("h1", "h1-tls", "h2", "h2c")
DEFAULT = "h1"
TLS = frozenset({"h1-tls", "h2"})
HTTP2 = frozenset({"h2", "h2c"})
HTTP2_GENERATOR = "h2load"
# what the generator or the probe must report having negotiated, per protocol
NEGOTIATED = {"h1": "http/1.1", "h1-tls": "http/1.1", "h2": "h2", "h2c": "h2c"}
# h2load sends what an input file lists: GETs only, in the file's order (bench.load.h2load)
HTTP2_TESTS_REFUSED = ("update user", "mixed", "upload")
# what the open-model generators (oha, k6) send at a fixed rate: HTTP/1.1, over TLS too
OPEN_MODEL_PROTOCOLS = ("h1", "h1-tls")


def scheme(protocol: str) -> str:
    return "https" if protocol in TLS else "http"


def generator_for(protocol: str, asked: str) -> str:
    """The closed-loop generator of a case: h2load for HTTP/2, else the one asked for."""
    return HTTP2_GENERATOR if protocol in HTTP2 else asked


def problems(protocols, tests, rates, behind, proxy_protocols: dict[str, tuple[str, ...]],
             tls_proxy: str, streams, generators=()) -> list[str]:
    """What a run cannot do with these settings, one sentence each (empty: fine).
    `proxy_protocols`: each available proxy's declared protocols (proxy.toml)."""
    out = []
    if HTTP2_GENERATOR in generators:
        out.append(f"--generator {HTTP2_GENERATOR}: it is chosen by --protocol h2 or h2c "
                   f"(HTTP/2 cases), never for HTTP/1.1")
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown:
        out.append(f"unknown --protocol {', '.join(unknown)}; valid: {', '.join(PROTOCOLS)}")
        return out
    if len(set(protocols)) != len(protocols):
        out.append(f"--protocol lists a value twice: {','.join(protocols)}")
    if any(s < 1 or s > 1000 for s in streams) or len(set(streams)) != len(streams):
        out.append(f"--streams must be distinct numbers from 1 to 1000, got "
                   f"{','.join(map(str, streams))}")
    others = [p for p in protocols if p != DEFAULT]
    if not others:
        if tuple(streams) != (1,):
            out.append("--streams sets HTTP/2's concurrent streams per connection: it needs "
                       "--protocol h2 or h2c")
        return out
    no_rate = [p for p in protocols if p not in OPEN_MODEL_PROTOCOLS]
    if rates and no_rate:
        out.append(f"--rate (the open model: oha, k6) runs over "
                   f"{' and '.join(OPEN_MODEL_PROTOCOLS)} only for now (h2load has no fixed "
                   f"rate per request): drop --rate or --protocol {','.join(no_rate)}")
    if any(p in HTTP2 for p in protocols):
        refused = [t for t in tests if t in HTTP2_TESTS_REFUSED]
        if refused:
            out.append(f"--protocol h2/h2c: h2load sends GETs from a list, not a PATCH or "
                       f"POST with a body per request nor a weighted draw of endpoints; leave "
                       f"out --tests {', '.join(refused)}")
    elif tuple(streams) != (1,):
        out.append("--streams sets HTTP/2's concurrent streams per connection: it needs "
                   "--protocol h2 or h2c")
    edges = [b for b in behind if b != "none"] or [tls_proxy]
    for edge in edges:
        if edge not in proxy_protocols:
            out.append(f"--tls-proxy {edge}: no such proxy; known: "
                       f"{', '.join(sorted(proxy_protocols))}")
            continue
        lacking = [p for p in others if p not in proxy_protocols[edge]]
        if lacking:
            out.append(f"the {edge} proxy does not terminate {', '.join(lacking)} (its "
                       f"proxy.toml's protocols: {', '.join(proxy_protocols[edge])})")
    return out

