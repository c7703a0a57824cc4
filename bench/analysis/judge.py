"""Judging one measured sample: error rate, Little's law, a saturated load generator.

Pure functions of the stored figures, so they are unit-tested on numbers alone and can
be re-applied to old results with new rules.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# Little's law: with a closed loop of C connections, C ~= throughput x mean latency.
# When the measured latency explains much less than that, the missing time was spent
# outside the server's answer: in the client, in the kernel between requests, or in
# connection churn. That shortfall is reported as what it is, unexplained time, and only
# blamed on the client when the client's CPU says so too.
# The other way round is no problem: wrk corrects its latency histogram for coordinated
# omission (it adds the samples a stalled connection did not send), so after stalls its
# mean exceeds C / throughput. That ratio is recorded, not warned about.
LITTLE_FACTOR = 1.5
# wrk threads busy above this share of their CPU time means wrk, not the server, set the pace.
CLIENT_SATURATION = 0.90
# When wrk and the server share the machine's cores, a load generator that burns a third
# or more of all the CPU the test used (server + database + wrk) takes cores the server
# would otherwise have had: the figure measures the pair, not the server.
CLIENT_CPU_SHARE = 1 / 3
# A worker holding this many times its fair share of the client connections (connections
# / workers) serves them from one core and one pool while others idle: its requests queue.
SPREAD_FACTOR = 2.0


@dataclass
class Verdict:
    valid: bool
    reason: str | None
    warnings: list[str] = field(default_factory=list)
    figures: dict = field(default_factory=dict)


def error_rate(summary: dict) -> float:
    """Errors of every kind (connect, read, write, timeout, non-2xx/3xx, lost) per request
    sent; per completed request where the number sent is not known (schema 1 results)."""
    errors = summary["errors"]["total"]
    sent = summary.get("sent")
    attempts = sent if sent else summary["requests"]
    return errors / max(attempts, 1)


def describe_errors(summary: dict) -> str:
    parts = [f"{k} {v}" for k, v in summary["errors"].items() if k != "total" and v]
    return ", ".join(parts) or "none"


def littles_law_ratio(summary: dict, connections: int) -> float | None:
    """throughput x mean latency / connections: ~1 when the server's answers fill the time."""
    rps, mean_ms = summary["requests_per_sec"], summary["latency_ms"]["mean"]
    if not rps or mean_ms is None or connections <= 0:
        return None
    return rps * (mean_ms / 1000.0) / connections


def client_utilisation(client_cpu_s: float, wall_s: float, threads: int) -> float | None:
    """Share of the wrk threads' available CPU they used (1.0 = every thread always busy)."""
    if wall_s <= 0 or threads <= 0:
        return None
    return client_cpu_s / (wall_s * threads)


def client_cpu_share(client_cpu_s: float, server_side_cpu_s: float | None) -> float | None:
    """wrk's part of all the CPU time the test used (wrk + server tree + database)."""
    if server_side_cpu_s is None or client_cpu_s + server_side_cpu_s <= 0:
        return None
    return client_cpu_s / (client_cpu_s + server_side_cpu_s)


def judge(summary: dict, *, connections: int, threads: int, client_cpu_s: float,
          wall_s: float, threshold: float, server_cpu_s: float | None = None,
          database_cpu_s: float | None = None, generator: str = "wrk",
          open_model: bool = False) -> Verdict:
    """The verdict on one sample, from its stored figures. `connections` and `threads` are
    what the load generator really opened; the database's CPU counts as server-side work.
    In the open model (a fixed request rate) the connections are a cap, not the load, so
    Little's law says nothing about them."""
    warnings: list[str] = []
    rate = error_rate(summary)
    ratio = None if open_model else littles_law_ratio(summary, connections)
    util = client_utilisation(client_cpu_s, wall_s, threads)
    server_side = None if server_cpu_s is None else server_cpu_s + (database_cpu_s or 0.0)
    share = client_cpu_share(client_cpu_s, server_side)
    figures = {"error_rate": rate, "littles_law_ratio": ratio, "client_cpu_utilisation": util,
               "client_cpu_share": share,
               "latency_corrected_for_stalls": ratio is not None and ratio > LITTLE_FACTOR}

    valid, reason = True, None
    if summary["requests"] == 0:
        valid, reason = False, "no request completed"
    elif rate > threshold:
        valid = False
        reason = (f"{rate:.2%} of requests failed (threshold {threshold:.2%}): "
                  f"{describe_errors(summary)}")
    elif summary["errors"]["total"]:
        warnings.append(f"{summary['errors']['total']} errors ({rate:.3%}, under the "
                        f"{threshold:.2%} threshold): {describe_errors(summary)}")

    client_bound = False
    if util is not None and util >= CLIENT_SATURATION:
        client_bound = True
        warnings.append(f"client-bound: {generator} used {util:.0%} of its {threads} "
                        f"thread(s)' CPU; "
                        f"the load generator, not the server, may set this figure")
    elif share is not None and share >= CLIENT_CPU_SHARE:
        client_bound = True
        warnings.append(f"client-bound: {generator} used {share:.0%} of the CPU time of "
                        f"this test (server + database + {generator}, threshold "
                        f"{CLIENT_CPU_SHARE:.0%}); sharing "
                        f"the cores with its load generator, the server is not what sets this "
                        f"figure")
    if ratio is not None and ratio < 1 / LITTLE_FACTOR:
        warnings.append(f"unexplained time: {1 - ratio:.0%} of the {connections} connections' "
                        f"time is not "
                        f"explained by server latency (throughput x mean latency = {ratio:.2f} "
                        f"x connections, Little's law): time went to the client, the kernel "
                        f"or connection set-up between requests")
    figures["client_bound"] = client_bound
    return Verdict(valid, reason, warnings, figures)


def budget_problem(process: dict) -> str | None:
    """More DB connections seen by the database than the server's budget: an advantage
    the other servers were not given."""
    budget, seen = process.get("db_budget"), process.get("db_connections_seen")
    if budget is None or seen is None or seen <= budget["total"]:
        return None
    return (f"the database saw {seen} connections from the server after the run, over its "
            f"budget of {budget['total']}")


def spread_warning(process: dict) -> str | None:
    """A worker process holding SPREAD_FACTOR x its fair share of the client connections.
    A reading that saw fewer connections than the client held is no evidence either way
    (the missing ones may all be on the idlest worker): no warning from it."""
    spread = process.get("client_connections") or {}
    counts = spread.get("per_worker")
    if not counts or not spread.get("total"):
        return None
    if spread.get("expected") and spread["total"] < spread["expected"]:
        return None
    fair = spread["total"] / len(counts)
    if spread["max"] < SPREAD_FACTOR * fair:
        return None
    return (f"client connections spread unevenly over the {len(counts)} worker processes: "
            f"{spread['max']} on the busiest, {spread['min']} on the idlest, "
            f"{fair:.0f} would be even")


# Connection: close asks for a new TCP connection per request; a server that answers with
# keep-alive anyway is measured on reused connections, not what the mode claims. Requests
# in flight at the stop and a few connections of other programs make the count inexact.
CLOSE_SHARE = 0.9
# An open-model point whose generator sent less than this share of the asked rate did not
# measure the server at that rate.
RATE_TOLERANCE = 0.05


def close_problem(sample: dict) -> str | None:
    """In `close` mode: fewer new TCP connections than requests means the server (or the
    client) kept connections alive."""
    gen = sample.get("generator") or {}
    opened, requests = sample.get("connections_opened"), (sample.get("summary") or {}).get("requests")
    if not gen.get("connection_close") or opened is None or not requests:
        return None
    if opened >= CLOSE_SHARE * requests:
        return None
    return (f"Connection: close asked for a new TCP connection per request, but only {opened:,} "
            f"connections were accepted for {requests:,} responses: connections were kept alive")


def rate_problem(summary: dict) -> str | None:
    """An open-model point the generator did not reach is not a figure at that rate."""
    rate = summary.get("rate") or {}
    asked, achieved = rate.get("asked"), rate.get("achieved")
    if not asked or achieved is None or achieved >= (1 - RATE_TOLERANCE) * asked:
        return None
    return (f"asked for {asked:,.0f} req/s but {achieved:,.0f} req/s were sent and answered: "
            f"not a measurement at the asked rate (the server or the generator could not "
            f"keep up; see not_sent)")


def iterations_problem(summary: dict) -> str | None:
    """A sample asked for N requests (k6's --iterations) that hit its --duration cap first
    is not the measurement asked for."""
    iterations = summary.get("iterations") or {}
    asked, completed = iterations.get("asked"), iterations.get("completed")
    if not asked or completed is None or completed >= asked:
        return None
    return (f"asked for {asked:,} iterations but {completed:,} completed within the "
            f"--duration cap: raise --duration, or ask for fewer")


# memory that grows by more than this share and this much over one window keeps growing
MEMORY_GROWTH = 0.20
MEMORY_GROWTH_MB = 10.0


def burst_problem(sample: dict, threshold: float) -> str | None:
    """The burst of new connections after the window: errors over the threshold."""
    burst = sample.get("burst")
    if not burst:
        return None
    rate = error_rate(burst["summary"])
    if burst["summary"]["requests"] and rate <= threshold:
        return None
    return (f"the {burst['seconds']:g} s burst of new connections after the window: "
            f"{rate:.2%} of requests failed ({describe_errors(burst['summary'])})")


def _worker_changes(process: dict) -> tuple[int, int]:
    """(worker pids gone, worker pids new) between the sample's start and its end."""
    pids = process.get("worker_pids") or {}
    before, after = pids.get("before"), pids.get("after")
    if before is None or after is None:
        return 0, 0
    return len(set(before) - set(after)), len(set(after) - set(before))


def oom_killed(cap: dict | None, role: str = "server") -> str | None:
    """--server-memory, --proxy-memory: the kernel's OOM killer ended a process of the
    role for its cap. A server that died of it already failed its sample with the reason;
    one whose supervisor outlived the killed worker (and maybe replaced it), or a proxy
    whose master did, ran the rest of the window short of it: the OOM kill, not the
    missing worker or the errors it caused, is why the sample does not stand."""
    kills = (cap or {}).get("oom_kills") or 0
    if not kills:
        return None
    return (f"killed by the kernel's OOM killer: the {role}'s memory cap of "
            f"{cap.get('limit_mb', 0):g} MiB ({cap.get('kind')}) was reached ({kills} OOM "
            f"kill{'s' if kills > 1 else ''} in its cgroup); the {role} lived on")


def workers_replaced(process: dict) -> str | None:
    """A worker process that exited during the sample (it crashed: its supervisor may
    or may not have replaced it) makes the sample invalid."""
    gone, new = _worker_changes(process)
    if not gone:
        return None
    return (f"worker processes exited during the sample (crashed; replaced or not): "
            f"{gone} gone, {new} new")


def workers_added(process: dict) -> str | None:
    """Workers that appeared during the sample while none exited: no crash, but the
    server ran with fewer workers for part of the window."""
    gone, new = _worker_changes(process)
    if gone or not new:
        return None
    return (f"{new} worker process{'es' if new > 1 else ''} appeared during the sample and "
            f"none exited: fewer workers served the start of the window (still being "
            f"started, or started on demand)")


def memory_growth(resources: dict) -> str | None:
    server = (resources or {}).get("server") or {}
    first, last = server.get("memory_first_mb"), server.get("memory_last_mb")
    if first is None or last is None:
        return None
    if last - first < MEMORY_GROWTH_MB or last < (1 + MEMORY_GROWTH) * first:
        return None
    return (f"memory grew: the server's PSS went from {first:,.0f} MiB in the first quarter "
            f"of the window to {last:,.0f} MiB in the last")


def histogram_problem(summary: dict) -> str | None:
    """A sample stored without its latency histogram (or with an incomplete one): its
    case's percentiles fall back to the median of the samples' own."""
    why = summary.get("latency_histogram_error")
    return f"latency histogram: {why}" if why else None


def judge_sample(sample: dict, threshold: float) -> Verdict:
    """`judge` on a stored sample record (schema 3): `sample["generator"]` is the load
    generator that ran the window."""
    gen = sample["generator"]
    resources = sample.get("resources") or {}
    generator = gen["name"]
    verdict = judge(sample["summary"], connections=gen["connections"], threads=gen["threads"],
                    client_cpu_s=gen["client_cpu_s"], wall_s=gen["wall_s"],
                    threshold=threshold,
                    server_cpu_s=(resources.get("server") or {}).get("cpu_s"),
                    database_cpu_s=(resources.get("database") or {}).get("cpu_s"),
                    generator=generator, open_model=gen.get("rate") is not None)
    process = sample.get("server_process") or {}
    # an OOM kill is why, whatever else it caused (errors, a worker gone)
    killed = oom_killed(process.get("memory_cap")) or \
        oom_killed(sample.get("proxy_memory_cap"), "proxy")
    if killed:
        verdict.valid, verdict.reason = False, killed
    over_budget, uneven = budget_problem(process), spread_warning(process)
    for problem in (over_budget, close_problem(sample), rate_problem(sample["summary"]),
                    iterations_problem(sample["summary"]), burst_problem(sample, threshold),
                    workers_replaced(process)):
        if problem and verdict.valid:
            verdict.valid, verdict.reason = False, problem
    for warning in (memory_growth(sample.get("resources")), uneven, workers_added(process),
                    histogram_problem(sample["summary"])):
        if warning:
            verdict.warnings.append(warning)
    return verdict
