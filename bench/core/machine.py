"""Which machine a run was measured on, as a stable id: a pure function of the
environment block a run stores (its hostname, CPU, cores, memory, kernel), so that the
analysis and the reports can group runs by machine without reading this machine."""
from __future__ import annotations

import hashlib
import json
import os


def fingerprint(env: dict) -> str:
    """A stable id of the machine (not of the run): results of one box form a series.

    The host name plus a hash of what shapes performance (CPU, cores, memory, kernel);
    BENCH_MACHINE_ID names the machine instead, e.g. for CI runners whose host names
    change every run but whose hardware class does not."""
    if os.environ.get("BENCH_MACHINE_ID"):
        return os.environ["BENCH_MACHINE_ID"]
    return hardware_id(env)


def hardware_id(env: dict) -> str:
    """fingerprint() without the BENCH_MACHINE_ID override: for another host's block (a
    remote host of the topology), which the override naming this machine must not hide."""
    keys = ("hostname", "cpu_model", "cpu_count", "memory_gb", "kernel")
    raw = json.dumps({k: env.get(k) for k in keys}, sort_keys=True)
    host = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(env.get("hostname")))
    return f"{host[:40]}-{hashlib.sha256(raw.encode()).hexdigest()[:8]}"
