"""What a server costs to run, per case, from its stored samples: how long it takes to
start, what memory it holds idle and under load, and what it gives per GiB and per
CPU-second. Pure: numbers in, numbers out (rendered by bench.report.footprint).

Every sample starts its server anew (samples are interleaved), so a case of N samples
holds N cold starts; only ok samples count, as in every other figure of a case.
"""
from __future__ import annotations

import statistics as pystats
from dataclasses import dataclass

from bench.storage import results


@dataclass(frozen=True)
class Spread:
    """The median of some samples' values, with their range."""
    median: float
    low: float
    high: float
    n: int


@dataclass(frozen=True)
class Footprint:
    start_to_ping_s: Spread | None      # spawn to the first /ping/ answered as the server
    start_to_ready_s: Spread | None     # ... and every worker of W counted
    idle_mb: Spread | None              # the tree's memory once ready, before any request
    load_mean_mb: float | None          # median over samples of the window's mean
    load_peak_mb: float | None          # the highest reading of any sample's window
    memory_kind: str | None             # pss, else uss / rss
    requests_per_sec: float | None      # the case's median
    requests_per_sec_per_gib: float | None     # req/s over the peak under load
    requests_per_cpu_s: float | None    # requests answered per second of server CPU
    # the memory's parts, medians over the ok samples (None where not measured):
    load_split_mb: dict | None = None   # under load: PSS's anon / file / shmem
    cap_split_mb: dict | None = None    # --server-memory: the cgroup's anon / file / sock /
    cap_kind: str | None = None         # kernel at the window's end, and the cap's kind
    artefact_mb: float | None = None    # what runs, as its build recorded it (None: no build)
    # spawn to the first 200 of the case's own endpoint (None: a test that writes)
    start_to_first_answer_s: Spread | None = None
    # the kernel's memory for the server's TCP sockets under load (not in PSS): the
    # median of the samples' means and the highest reading (None: not measured)
    socket_mean_mb: float | None = None
    socket_peak_mb: float | None = None
    # the run's build: seconds from nothing cached (--cold-build; None: not asked) and
    # the run's own build (warm after a cold one; usually an up-to-date check)
    build_cold_s: float | None = None
    build_warm_s: float | None = None
    # what load added per open client connection: (the mean under load - idle + the
    # sockets' kernel memory) / the connections the generator opened; the figure many
    # connections (--connections 10000, the delay test) are run for
    per_connection_kib: float | None = None
    connections: int | None = None


def per_connection(load_mean_mb: float | None, idle_mb: float | None,
                   socket_mean_mb: float | None, connections: int | None) -> float | None:
    """KiB of memory per open connection (None: a figure is missing)."""
    if load_mean_mb is None or idle_mb is None or not connections:
        return None
    return (load_mean_mb - idle_mb + (socket_mean_mb or 0.0)) * 1024 / connections


def spread(values: list[float]) -> Spread | None:
    values = [v for v in values if v is not None]
    if not values:
        return None
    return Spread(pystats.median(values), min(values), max(values), len(values))


def median_parts(parts: list[dict | None], names: tuple[str, ...]) -> dict | None:
    """Each named part's median over the dicts that have it; None when none has any."""
    out = {}
    for name in names:
        values = [p[name] for p in parts if p and p.get(name) is not None]
        if values:
            out[name] = pystats.median(values)
    return out or None


def case_footprint(case: dict, build: dict | None = None) -> Footprint | None:
    """The footprint of a case with derived stats (bench.analysis.statistics.refresh);
    None when no ok sample has a start-up or memory figure (runs stored before either
    was measured). `build`: its server's build record (the run's "builds")."""
    ok = [s for s in case.get("samples", []) if s.get("status") == results.OK]
    process = [s.get("server_process") or {} for s in ok]
    ping = spread([(s.get("overhead_s") or {}).get("start_to_ping") for s in ok])
    idle = spread([p.get("memory_idle_mb") for p in process])
    stats = case.get("stats") or {}
    # under load: the case's resource summary (median of the windows' means, their peak)
    loaded = (stats.get("resources") or {}).get("server") or {}
    peak = loaded.get("memory_peak_mb")
    if ping is None and idle is None and peak is None:
        return None
    rps = (stats.get("requests_per_sec") or {}).get("median")
    kinds = sorted({k for k in [p.get("memory_idle_kind") for p in process]
                    + [loaded.get("memory_kind")] if k})
    caps = [p.get("memory_cap") for p in process if p.get("memory_cap")]
    sockets = [((s.get("resources") or {}).get("server") or {}).get("socket_memory_mb")
               for s in ok]
    sockets = [s for s in sockets if s]
    socket_mean = pystats.median(s["mean"] for s in sockets) if sockets else None
    opened = [(s.get("generator") or {}).get("connections") for s in ok]
    opened = int(pystats.median(c for c in opened if c)) if any(opened) else None
    return Footprint(
        per_connection_kib=per_connection(loaded.get("memory_mb"), idle and idle.median,
                                          socket_mean, opened),
        connections=opened,
        socket_mean_mb=socket_mean,
        socket_peak_mb=max(s["peak"] for s in sockets) if sockets else None,
        load_split_mb=median_parts([(s.get("resources") or {}).get("server", {})
                                    .get("memory_split_mb") for s in ok],
                                   ("anon", "file", "shmem")),
        cap_split_mb=median_parts([{k.removesuffix("_mb"): v for k, v in c.items()}
                                   for c in caps], ("anon", "file", "sock", "kernel")),
        cap_kind=caps[0]["kind"] if caps else None,
        artefact_mb=(build or {}).get("size_mb"),
        build_cold_s=(build or {}).get("cold_seconds"),
        build_warm_s=(build or {}).get("seconds") if (build or {}).get("ok") else None,
        start_to_first_answer_s=spread([(s.get("overhead_s") or {}).get("start_to_first_answer")
                                        for s in ok]),
        start_to_ping_s=ping,
        start_to_ready_s=spread([(s.get("overhead_s") or {}).get("start_to_ready")
                                 for s in ok]),
        idle_mb=idle,
        load_mean_mb=loaded.get("memory_mb"),
        load_peak_mb=peak,
        memory_kind="/".join(kinds) or None,
        requests_per_sec=rps,
        requests_per_sec_per_gib=rps / (peak / 1024) if rps is not None and peak else None,
        requests_per_cpu_s=(stats.get("resources") or {}).get("requests_per_server_cpu_s"))
