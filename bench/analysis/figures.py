"""The figures a comparison judges per case, in one place: how each is read from a
stored sample, which way is worse, whether its change is relative or absolute, and its
default threshold. `compare`, the A/A calibration (noise) and `ab` share these.

COST is the server's CPU time per request (µs, its cgroup's or its process tree's
exact CPU time over the requests answered): a slowdown that a busy machine hides from
req/s (the client or the database set the pace) still costs CPU, and on a CPU-bound
2-core machine a planted 1.7 µs per request moved it by +7.6 % where req/s moved -5.2 %,
with the same sample-to-sample spread.

START and MEMORY are what the server costs to run (bench.analysis.footprint): each
sample's cold start to its first /ping/, and the peak of its tree's memory under load;
a dependency bump that doubles either is a regression even when req/s holds."""
from __future__ import annotations

from bench.core.counting import INSTRUCTIONS, SYSCALLS

RPS, P99, ERROR_RATE, COST = "req/s", "p99", "error rate", "cost"
START, MEMORY = "start-up", "peak memory"
FIGURES = (RPS, P99, ERROR_RATE, COST, START, MEMORY)
# which way is worse, and whether a change is relative (a ratio) or absolute
WORSE_WHEN = {RPS: "lower", P99: "higher", ERROR_RATE: "higher", COST: "higher",
              START: "higher", MEMORY: "higher"}
RELATIVE = {RPS: True, P99: True, ERROR_RATE: False, COST: True, START: True, MEMORY: True,
            INSTRUCTIONS: True, SYSCALLS: True}
# --instructions' figures, counted once per case rather than measured per sample
# (bench.analysis.instructions judges them): each is worse when higher
COUNTED = (INSTRUCTIONS, SYSCALLS)
WORSE_WHEN.update({figure: "higher" for figure in COUNTED})
UNITS = {RPS: "req/s", P99: "ms", ERROR_RATE: "", COST: "server CPU-µs per request",
         START: "s from the spawn to /ping/", MEMORY: "MiB (the server tree's PSS at its peak)",
         INSTRUCTIONS: "instructions per request", SYSCALLS: "system calls per request"}

DEFAULT_THRESHOLD = 0.05
# p99 rests on the slowest 1 % of a sample's requests, so between A/A samples it moves
# three to four times as much as the median req/s does (the README's sweep: p99 CVs of
# 10-20 % where req/s stays within 3-5 %): four times req/s' threshold.
DEFAULT_P99_THRESHOLD = 0.20
# An absolute rise of the fraction of requests that failed. A sample above
# Settings.error_threshold (0.1 % by default) is invalid and its case broken, so among ok
# samples the rate lies between 0 and 0.1 %: a fifth of that bound is worth reporting.
DEFAULT_ERROR_THRESHOLD = 0.0002
# the server's CPU per request is as steady as req/s (CV 2-3 % for both, A/A samples of
# sanic plain on 2 cores): the same default
DEFAULT_COST_THRESHOLD = DEFAULT_THRESHOLD
# a cold start is wall time on a shared machine: two back-to-back A/A runs of 5 samples
# on 2 cores (docs/compare-and-nightly.md, "compare") put tunable_cost's median start-up at
# 110 and 137 ms (+25 %; samples 87-148 ms), gin's at 20 and 20 ms (18-30 ms): twice
# that A/A difference. A calibration (`calibrate`) gives each case its own.
DEFAULT_START_THRESHOLD = 0.50
# the peak of the server tree's PSS is steady: in the same A/A runs 16.5-17.1 MiB
# (tunable_cost) and 22.9-23.5 MiB (gin), medians within 1 %: 10 % is a real change
DEFAULT_MEMORY_THRESHOLD = 0.10
DEFAULTS = {RPS: DEFAULT_THRESHOLD, P99: DEFAULT_P99_THRESHOLD,
            ERROR_RATE: DEFAULT_ERROR_THRESHOLD, COST: DEFAULT_COST_THRESHOLD,
            START: DEFAULT_START_THRESHOLD, MEMORY: DEFAULT_MEMORY_THRESHOLD}


def sample_value(figure: str, sample: dict) -> float | None:
    """One stored sample's value of `figure` (None: the sample did not measure it, e.g.
    a run from before costs were recorded)."""
    if figure == COST:
        return ((sample.get("resources") or {}).get("server") or {}).get("cpu_us_per_request")
    if figure == START:
        return (sample.get("overhead_s") or {}).get("start_to_ping")
    if figure == MEMORY:
        return ((sample.get("resources") or {}).get("server") or {}).get("memory_peak_mb")
    summary = sample["summary"]
    if figure == RPS:
        return summary["requests_per_sec"]
    if figure == P99:
        return summary["latency_ms"].get("p99")
    sent = summary.get("sent") or summary["requests"]
    return summary["errors"]["total"] / sent if sent else None


def ok_values(case: dict, figure: str) -> list[float]:
    """`figure` of each ok sample of a stored case (only ok samples enter the figures)."""
    out = []
    for s in case["samples"]:
        if s["status"] == "ok" and s.get("summary"):
            v = sample_value(figure, s)
            if v is not None:
                out.append(float(v))
    return out
