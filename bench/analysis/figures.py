"""The three figures a comparison judges per case, in one place: how each is read from a
stored sample, which way is worse, whether its change is relative or absolute, and its
default threshold. `compare`, the A/A calibration (noise) and `ab` share these."""
from __future__ import annotations

RPS, P99, ERROR_RATE = "req/s", "p99", "error rate"
FIGURES = (RPS, P99, ERROR_RATE)
# which way is worse, and whether a change is relative (a ratio) or absolute
WORSE_WHEN = {RPS: "lower", P99: "higher", ERROR_RATE: "higher"}
RELATIVE = {RPS: True, P99: True, ERROR_RATE: False}

DEFAULT_THRESHOLD = 0.05
# p99 rests on the slowest 1 % of a sample's requests, so between A/A samples it moves
# three to four times as much as the median req/s does (the README's sweep: p99 CVs of
# 10-20 % where req/s stays within 3-5 %): four times req/s' threshold.
DEFAULT_P99_THRESHOLD = 0.20
# An absolute rise of the fraction of requests that failed. A sample above
# Settings.error_threshold (0.1 % by default) is invalid and its case broken, so among ok
# samples the rate lies between 0 and 0.1 %: a fifth of that bound is worth reporting.
DEFAULT_ERROR_THRESHOLD = 0.0002
DEFAULTS = {RPS: DEFAULT_THRESHOLD, P99: DEFAULT_P99_THRESHOLD, ERROR_RATE: DEFAULT_ERROR_THRESHOLD}


def sample_value(figure: str, summary: dict) -> float | None:
    """One sample's value of `figure` from its stored summary."""
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
            v = sample_value(figure, s["summary"])
            if v is not None:
                out.append(float(v))
    return out
