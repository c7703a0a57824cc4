"""Where each role ran, for the results: the hosts file's topology, each remote host's
environment block with the code its checkout holds ("git": what the preflight pinned to
the harness's), and the network between the roles (TCP connect round trips, measured
from the host that opens the connections in a run: client to server, server to database).
"""
from __future__ import annotations

from bench.infra.environment import git_state
from bench.infra.hosts import Hosts

RTT_SAMPLES = 20


def round_trip(hosts: Hosts, source: str, target: str) -> dict | None:
    """Median and minimum TCP connect time (ms) from role `source`'s host to `target`'s
    SSH port (the agent's `rtt` step: a TCP connect costs one round trip); None when
    both roles are local, {"error": ...} when the probe fails."""
    if not (hosts.is_remote(source) or hosts.is_remote(target)):
        return None
    spec = hosts.specs.get(target)
    address, port = (spec.address, hosts.ssh_port(target) or 22) if spec else ("127.0.0.1", 22)
    try:
        found = hosts.for_role(source).call("rtt", address=address, port=port,
                                            samples=RTT_SAMPLES)
    except Exception as exc:  # noqa: BLE001 - a figure missing, never a run lost
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"tcp_connect_ms_median": found["median_ms"], "tcp_connect_ms_min": found["min_ms"],
            "samples": RTT_SAMPLES, "to": f"{address}:{port}"}


def record(hosts: Hosts) -> dict:
    """The results' `topology` block."""
    roles = hosts.topology()
    if not any(hosts.is_remote(r) for r in roles):
        return {"roles": roles}
    fingerprints = {}
    for role in roles:
        if hosts.is_remote(role):
            host = hosts.for_role(role)
            try:
                fingerprints[role] = {**host.fingerprint(), "git": git_state(host)}
            except Exception as exc:  # noqa: BLE001
                fingerprints[role] = {"error": str(exc)[:200]}
    return {"roles": roles, "hosts": fingerprints,
            "network": {"client->server": round_trip(hosts, "client", "server"),
                        "server->database": round_trip(hosts, "server", "database")}}
