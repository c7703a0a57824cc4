"""Where each role ran, for the results: the hosts file's topology, each remote host's
environment block, and the network between the roles (TCP connect round trips, measured
from the host that opens the connections in a run: client to server, server to database).
"""
from __future__ import annotations

from bench.infra.hosts import Hosts

# a TCP connect to a port that answers (the host's sshd) costs one round trip; the median
# of a few is the round-trip time without a ping binary or raw sockets
RTT_PROBE = """
import socket, statistics, sys, time
address, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
times = []
for _ in range(n):
    t = time.perf_counter()
    with socket.create_connection((address, port), timeout=2):
        times.append((time.perf_counter() - t) * 1000)
print(round(statistics.median(times), 4), round(min(times), 4))
"""
RTT_SAMPLES = 20


def round_trip(hosts: Hosts, source: str, target: str) -> dict | None:
    """Median and minimum TCP connect time (ms) from role `source`'s host to `target`'s
    (its SSH port); None when both roles are local or the probe fails."""
    if not (hosts.is_remote(source) or hosts.is_remote(target)):
        return None
    spec = hosts.specs.get(target)
    address, port = (spec.address, spec.port) if spec else ("127.0.0.1", 22)
    host = hosts.for_role(source)
    python = hosts.specs[source].python if source in hosts.specs else "python3"
    try:
        done = host.run([python, "-c", RTT_PROBE, address, str(port), str(RTT_SAMPLES)],
                        timeout=30)
        median, least = (float(x) for x in done.stdout.split())
    except Exception as exc:  # noqa: BLE001 - a figure missing, never a run lost
        return {"error": f"{type(exc).__name__}: {exc}"[:200]}
    return {"tcp_connect_ms_median": median, "tcp_connect_ms_min": least,
            "samples": RTT_SAMPLES, "to": f"{address}:{port}"}


def record(hosts: Hosts) -> dict:
    """The results' `topology` block."""
    roles = hosts.topology()
    if not any(hosts.is_remote(r) for r in roles):
        return {"roles": roles}
    fingerprints = {}
    for role in roles:
        if hosts.is_remote(role):
            try:
                fingerprints[role] = hosts.for_role(role).fingerprint()
            except Exception as exc:  # noqa: BLE001
                fingerprints[role] = {"error": str(exc)[:200]}
    return {"roles": roles, "hosts": fingerprints,
            "network": {"client->server": round_trip(hosts, "client", "server"),
                        "server->database": round_trip(hosts, "server", "database")}}
