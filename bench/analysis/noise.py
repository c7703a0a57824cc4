"""An A/A calibration: how much each figure of each case moves by noise alone on one
machine, from two runs of the same code, as per-case thresholds for `compare`; and when
a stored calibration may be used (its comparability key matches the baseline's).

Pure functions of stored documents; bench.storage.calibration keeps the result.
"""
from __future__ import annotations

import numpy as np

from bench.analysis import comparability, statistics
from bench.analysis import instructions as counted
from bench.analysis.figures import (COST, ERROR_RATE, FIGURES, MEMORY, P99, RELATIVE, RPS,
                                    START, ok_values)

FORMAT = 2
# Two back-to-back runs see the noise within one sitting, not the drift between nights.
# Measured on this 2-core machine (README, "A/B of two versions in one sitting"): a
# calibration pair 1.3 % apart, then nights of the same code 2.2-2.4 % apart (p = 0.03)
# a few minutes later; with a 2 % floor, 1 of 10 A/A case comparisons read "slower" and
# 1 "faster". 3 % is above that drift and below the ~5 % slowdowns every night caught.
CALIBRATION_FLOOR = 0.03
# the server's CPU per request is as steady as req/s: the same floor
FLOORS = {RPS: CALIBRATION_FLOOR, P99: 0.05, ERROR_RATE: 0.0001, COST: CALIBRATION_FLOOR,
          # a cold start is wall time (p99's floor); the peak of the memory steady (req/s')
          START: 0.05, MEMORY: CALIBRATION_FLOOR}
# The standard error of a median is about 1.2533 sigma / sqrt(n) (normal data), so the
# difference of two medians of n samples has about 1.2533 sigma sqrt(2 / n): the size of
# change that noise alone typically makes between two runs. One such error, not three:
# the Mann-Whitney test already guards significance; the threshold is the effect size
# worth reporting. (Three made every threshold on this machine 20-30 %.)
MEDIAN_SE_FACTOR = 1.2533
SE_MULTIPLE = 1.0
AA_MULTIPLE = 1.5


def aa_threshold(first: list[float], second: list[float], floor: float = CALIBRATION_FLOOR,
                 relative: bool = True) -> float:
    """The smallest change of one figure worth calling a change for one case, from two
    runs of the same code on the same machine (A/A): the larger of the floor, 1.5 x the
    difference the two runs showed, and the standard error of that difference estimated
    from the samples' spread. Relative: of the medians, as a fraction (req/s, p99).
    Absolute: of the means (the error rate, mostly 0, whose median says nothing)."""
    n = min(len(first), len(second))
    if relative:
        med1, med2 = float(np.median(first)), float(np.median(second))
        observed = abs(med2 / med1 - 1) if med1 else 0.0
        cvs = [statistics.spread(v).cv for v in (first, second)]
        sigma, factor = max((c for c in cvs if c is not None), default=0.0), MEDIAN_SE_FACTOR
    else:
        observed = abs(float(np.mean(second)) - float(np.mean(first)))
        sds = [statistics.spread(v).stdev for v in (first, second)]
        sigma, factor = max((s for s in sds if s is not None), default=0.0), 1.0
    noise = SE_MULTIPLE * factor * sigma * (2 / n) ** 0.5 if n else 0.0
    return max(floor, AA_MULTIPLE * observed, noise)


def _aa_change(first: list[float], second: list[float], relative: bool) -> float | None:
    if relative:
        med1 = float(np.median(first))
        return float(np.median(second)) / med1 - 1 if med1 else None
    return float(np.mean(second)) - float(np.mean(first))


def calibrate(first: dict, second: dict, floor: float | None = None) -> dict:
    """What a calibration stores, from two runs of the same selection: per case (ok in
    both) a threshold for each figure, the per-sample values they came from and the A/A
    change, plus the comparability key and the two run ids. `floor`: req/s' floor."""
    floors = {**FLOORS, **({RPS: floor} if floor is not None else {})}
    statistics.refresh(first)
    statistics.refresh(second)
    by_id = {c["id"]: c for c in first["cases"]}
    thresholds, figures = {}, {}
    for case in second["cases"]:
        other = by_id.get(case["id"])
        if other is None or not case["status"] == other["status"] == "ok":
            continue
        for figure in FIGURES:
            x, y = ok_values(other, figure), ok_values(case, figure)
            if not (x and y):
                continue
            value = aa_threshold(x, y, floors[figure], RELATIVE[figure])
            thresholds.setdefault(case["id"], {})[figure] = round(value, 6)
            figures.setdefault(case["id"], {})[figure] = {
                "first": x, "second": y, "aa_change": _aa_change(x, y, RELATIVE[figure])}
        for figure in counted.COUNTED:          # --instructions: the counts' A/A
            x, y = counted.values(other, figure), counted.values(case, figure)
            if not (x and y) or counted.comparable(other, case):
                continue
            value = counted.aa_threshold(x, y, counted.DEFAULT_THRESHOLDS[figure])
            thresholds.setdefault(case["id"], {})[figure] = round(value, 6)
            figures.setdefault(case["id"], {})[figure] = {
                "first": x, "second": y, "aa_change": _aa_change(x, y, True)}
    found = {"format": FORMAT, "runs": [first["run_id"], second["run_id"]],
             "key": comparability.key(first), "key_id": comparability.key_id(first),
             "thresholds": thresholds, "figures": figures}
    if any(counted.count_of(c) for c in second["cases"]):
        found["instructions"] = True       # nightly's --instructions needs these thresholds
    return found


def usable_thresholds(stored: dict | None, base_key: dict
                      ) -> tuple[dict[str, dict[str, float]] | None, str | None]:
    """(case id -> figure -> threshold, or None when it cannot be used; a note saying
    why it was ignored, or what to know about it). A calibration counts only for runs
    whose comparability key matches its own (database engines both hold)."""
    if stored is None:
        return None, None
    path, fmt = stored.get("path", "the calibration"), stored.get("format", 1)
    if fmt == 1:        # before format 2: req/s thresholds, matched by machine id only
        return ({case: {RPS: float(v)} for case, v in stored.get("thresholds", {}).items()},
                f"the calibration {path} is of format 1: req/s thresholds only, and no "
                f"comparability key to check; run `calibrate` again")
    if fmt != FORMAT:
        return None, f"ignored the calibration {path}: unknown format {fmt!r}"
    key = stored["key"]
    engines = set(key["databases"]) & set(base_key["databases"])
    diffs = comparability.differences(key, base_key, engines=engines)
    if diffs:
        return None, (f"ignored the calibration {path}, its runs are not comparable with "
                      f"the baseline: {'; '.join(diffs)}")
    return stored["thresholds"], None
