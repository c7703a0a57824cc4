"""This host's view of the network: whether a port is free here, and the round-trip
time to another host."""
from __future__ import annotations

import socket
import statistics
import time


def port_free(port: int, host: str = "127.0.0.1") -> bool:
    """Nothing listens on host:port here (a bind would succeed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def rtt(address: str, port: int, samples: int) -> dict:
    """Median and minimum TCP connect time (ms) from here to address:port. A TCP connect
    to a port that answers (the host's sshd) costs one round trip; the median of a few is
    the round-trip time without a ping binary or raw sockets."""
    times = []
    for _ in range(samples):
        t = time.perf_counter()
        with socket.create_connection((address, port), timeout=2):
            times.append((time.perf_counter() - t) * 1000)
    return {"median_ms": round(statistics.median(times), 4), "min_ms": round(min(times), 4)}
