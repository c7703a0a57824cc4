"""A machine's runs as series over time, per case and comparability key, and the points
where a series' level changed. Pure functions of stored documents.

A series holds one case's runs that share a comparability key (bench.analysis.comparability,
the rule `compare` uses): runs of two presets, generators or database versions make two
series, and change points are looked for within each series only, never across a change
of key; the key's changes are listed with what differs instead.

Change points come from Apache Otava's E-divisive implementation (the method MongoDB
built for nightly performance series): every point is judged against the whole series,
not only against last night, so a slow drift or a noisy night neither hides nor fakes a
step. A change must be significant (p < MAX_PVALUE, Otava's t-test on the two segments)
and large (MIN_MAGNITUDE relative change of the mean).
"""
from __future__ import annotations

import statistics as pystats
from dataclasses import dataclass, field

from bench.analysis import comparability, statistics
from bench.analysis import instructions as counted
from bench.analysis.figures import RPS, ok_values
from bench.core import suite, workloads

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
    # the server's dependency versions in that run (servers.<id>.versions), {} if none
    versions: dict = field(default_factory=dict)


@dataclass
class ChangePoint:
    index: int                  # first point of the new level
    run_id: str
    before: float               # mean of the segment before
    after: float                # mean of the segment after
    change: float               # relative change of the mean
    p_value: float
    # the server's dependencies whose versions differ between the last run of the old
    # level and the first of the new ("sanic 25.12.1 → 26.0.0"): what a reader asks first
    dependency_changes: list[str] = field(default_factory=list)


@dataclass
class Series:
    """One case's runs of one comparability key; `points` hold the median of one figure
    (bench.analysis.figures: req/s unless asked otherwise)."""
    case_id: str
    server: str
    database: str
    orm: bool
    test: str
    key_id: str = ""
    points: list[Point] = field(default_factory=list)
    change_points: list[ChangePoint] = field(default_factory=list)
    # how this series' key differs from the case's series before it (empty: the first)
    differences: list[str] = field(default_factory=list)
    n: int | None = None        # the suite's rows per request (part of the case id)

    @property
    def title(self) -> str:
        """The test as the tables name it: "queries n=20", "get user"."""
        return suite.title(self.test, self.n)


@dataclass
class KeyChange:
    run_id: str                 # the first run with the new key
    previous_run_id: str
    differences: list[str]


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


def _point_values(case: dict, figure: str) -> tuple[float, float | None, float | None, int] | None:
    """(median, its interval's low and high, samples) of a case's `figure`: req/s as the
    case's stats hold it; another figure (start-up, peak memory) from its ok samples."""
    if figure == RPS:
        rps = case["stats"]["requests_per_sec"]
        return rps["median"], rps["ci_low"], rps["ci_high"], rps["n"]
    if figure in counted.COUNTED:            # a run's counts (--instructions): their mean
        values = counted.values(case, figure)
        return (sum(values) / len(values), min(values), max(values), len(values)) \
            if values else None
    values = ok_values(case, figure)
    if not values:
        return None
    ci = statistics.median_ci(values)
    return (pystats.median(values), ci[0] if ci else None, ci[1] if ci else None, len(values))


def build(docs: list[dict], *, server: str | None = None, test: str | None = None,
          figure: str = RPS) -> list[Series]:
    """Series of each case's median `figure` (req/s, or another of bench.analysis.figures:
    start-up, peak memory) over the runs (oldest first), one per comparability key, with
    change points within each. Only ok cases make points: a failed night is a gap, not a
    zero; a run that did not measure the figure (one stored before it was) is none."""
    series: dict[tuple[str, str], Series] = {}
    keys: dict[tuple[str, str], dict] = {}
    for doc in sorted(docs, key=lambda d: d["run_id"]):
        statistics.refresh(doc)
        git = doc["environment"].get("git") or {}
        key = comparability.key(doc)
        for case in doc["cases"]:
            if (server and case["server"] != server) or (test and case["test"] != test):
                continue
            if case["status"] != "ok":
                continue
            point = _point_values(case, figure)
            if point is None:
                continue
            kid = comparability.key_id(doc, case["database"])
            mix = (case.get("key") or {}).get("mix")
            if mix:                # the mixed test under another profile: another series
                kid += f" {mix}"
            s = series.get((case["id"], kid))
            if s is None:
                s = series[case["id"], kid] = Series(case["id"], case["server"], case["database"],
                                                     case["orm"], workloads.case_title(case),
                                                     kid,
                                                     n=(case.get("key") or {}).get("n"))
                keys[case["id"], kid] = key
            s.points.append(Point(doc["run_id"], doc["started_at"],
                                  git.get("commit") or doc["environment"].get("git_commit"),
                                  *point, ((doc.get("servers") or {}).get(case["server"]) or {})
                                  .get("versions") or {}))
    previous: dict[str, tuple[str, str]] = {}
    for (case_id, kid), s in series.items():          # in order of each series' first run
        values = [p.median for p in s.points]
        # a count's level moves by its own threshold, not req/s' noise-sized one
        magnitude = counted.DEFAULT_THRESHOLDS.get(figure, MIN_MAGNITUDE)
        s.change_points = [ChangePoint(i, s.points[i].run_id, before, after,
                                       after / before - 1 if before else 0.0, p,
                                       comparability.dependency_changes(
                                           s.points[i - 1].versions, s.points[i].versions))
                           for i, before, after, p in change_points(values,
                                                                     min_magnitude=magnitude)]
        if case_id in previous:
            engines = () if s.database == "none" else (s.database,)
            s.differences = comparability.differences(keys[previous[case_id]], keys[case_id, kid],
                                                      engines=engines)
        previous[case_id] = (case_id, kid)
    return list(series.values())


def key_changes(docs: list[dict]) -> list[KeyChange]:
    """Between consecutive runs (oldest first), where the comparability key changed, and
    how: the points a series is split at instead of a change point."""
    out, before = [], None
    for doc in sorted(docs, key=lambda d: d["run_id"]):
        key = comparability.key(doc)
        if before is not None and before[1] != key:
            out.append(KeyChange(doc["run_id"], before[0],
                                 comparability.differences(before[1], key)))
        before = (doc["run_id"], key)
    return out
