"""A machine's runs as series over time, per case, and the points where a series' level
changed. Pure functions of stored documents.

Change points come from Apache Otava's E-divisive implementation (the method MongoDB
built for nightly performance series): every point is judged against the whole series,
not only against last night, so a slow drift or a noisy night neither hides nor fakes a
step. A change must be significant (p < MAX_PVALUE, Otava's t-test on the two segments)
and large (MIN_MAGNITUDE relative change of the mean).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.analysis import statistics

MAX_PVALUE = 0.001
MIN_MAGNITUDE = 0.02
WINDOW = 50


@dataclass
class Point:
    run_id: str
    started_at: str
    commit: str | None
    median: float
    ci_low: float | None
    ci_high: float | None
    samples: int


@dataclass
class ChangePoint:
    index: int                  # first point of the new level
    run_id: str
    before: float               # mean of the segment before
    after: float                # mean of the segment after
    change: float               # relative change of the mean
    p_value: float


@dataclass
class Series:
    case_id: str
    server: str
    database: str
    orm: bool
    test: str
    points: list[Point] = field(default_factory=list)
    change_points: list[ChangePoint] = field(default_factory=list)


def change_points(values: list[float], *, max_pvalue: float = MAX_PVALUE,
                  min_magnitude: float = MIN_MAGNITUDE) -> list[tuple[int, float, float, float]]:
    """(index, mean before, mean after, p-value) of each change of level in `values`."""
    if len(values) < 4:
        return []
    from otava.analysis import compute_change_points
    found, _ = compute_change_points(values, window_len=WINDOW, max_pvalue=max_pvalue,
                                     min_magnitude=min_magnitude)
    return [(int(c.index), float(c.stats.mean_1), float(c.stats.mean_2), float(c.stats.pvalue))
            for c in found]


def build(docs: list[dict], *, server: str | None = None, test: str | None = None) -> list[Series]:
    """Series of each case's median req/s over the runs (oldest first), with change points.
    Only ok cases make points: a failed night is a gap, not a zero."""
    series: dict[str, Series] = {}
    for doc in sorted(docs, key=lambda d: d["run_id"]):
        statistics.refresh(doc)
        git = doc["environment"].get("git") or {}
        for case in doc["cases"]:
            if (server and case["server"] != server) or (test and case["test"] != test):
                continue
            if case["status"] != "ok":
                continue
            rps = case["stats"]["requests_per_sec"]
            s = series.setdefault(case["id"], Series(case["id"], case["server"], case["database"],
                                                     case["orm"], case["test"]))
            s.points.append(Point(doc["run_id"], doc["started_at"],
                                  git.get("commit") or doc["environment"].get("git_commit"),
                                  rps["median"], rps["ci_low"], rps["ci_high"], rps["n"]))
    for s in series.values():
        values = [p.median for p in s.points]
        s.change_points = [ChangePoint(i, s.points[i].run_id, before, after,
                                       after / before - 1 if before else 0.0, p)
                           for i, before, after, p in change_points(values)]
    return list(series.values())
