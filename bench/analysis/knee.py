"""The knee of a latency-vs-offered-load curve, from stored open-model points alone.

A point is one rate asked of a server (a share of its measured maximum, or absolute), with
what the generator achieved and the p99 latency measured from each request's intended
send time. The knee is the highest rate the server sustained with its p99 under a stated
bound: past it, latency grows faster than the load.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RatePoint:
    asked: float                # req/s
    achieved: float | None      # req/s, sent and answered
    p99_ms: float | None
    ok: bool                    # the sample was valid (rate reached, errors under threshold)


def knee(points: list[RatePoint], bound_ms: float) -> RatePoint | None:
    """The highest-rate point of the leading run of points (by asked rate) that are ok and
    keep p99 under `bound_ms`. The run stops at the first point that fails either: a
    lower p99 at a higher rate after a violation is noise, not a recovery. None when even
    the lowest rate fails."""
    best = None
    for point in sorted(points, key=lambda p: p.asked):
        if not point.ok or point.p99_ms is None or point.p99_ms >= bound_ms:
            break
        best = point
    return best
