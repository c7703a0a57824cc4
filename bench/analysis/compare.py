"""Comparing two stored runs case by case: broken, slower, faster, unchanged, or not
comparable.

Pure functions of two results documents (and optionally a stored calibration): nothing
is measured here. Three figures are judged per case, each with its own threshold: median
req/s (lower is worse), median p99 latency (higher is worse) and the error rate (higher
is worse, in absolute terms). A figure moved only when its change passes the threshold
*and* a Mann-Whitney U test on the per-sample values gives p < alpha. With too few
samples for the test ever to reach p < alpha, the threshold alone decides and the figure
is *weak*: shown and warned about, never a regression (`Comparison.regressed`).
Besides those three: the server's CPU per request, its start-up and its peak memory
(bench.analysis.figures), each judged the same way.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from math import comb

import numpy as np

from bench.analysis import comparability, noise, statistics
from bench.analysis import instructions as counted
from bench.core import suite, workloads
from bench.analysis.comparability import machine_id  # noqa: F401 - the CLI's name for it
from bench.analysis.figures import (DEFAULT_COST_THRESHOLD,  # noqa: F401
                                    DEFAULT_ERROR_THRESHOLD, DEFAULT_MEMORY_THRESHOLD,
                                    DEFAULT_P99_THRESHOLD, DEFAULT_START_THRESHOLD,
                                    DEFAULT_THRESHOLD, DEFAULTS, COST, ERROR_RATE, FIGURES,
                                    MEMORY, P99, RELATIVE, RPS, START, WORSE_WHEN, ok_values)
from bench.analysis.noise import aa_threshold, calibrate  # noqa: F401 - compare's A/A side

# every figure's default threshold, the counted ones (--instructions) included
ALL_DEFAULTS = {**DEFAULTS, **counted.DEFAULT_THRESHOLDS}
BROKEN, SLOWER, FASTER = "broken", "slower", "faster"
UNCHANGED, NOT_COMPARABLE = "unchanged", "not comparable"
VERDICTS = (BROKEN, SLOWER, FASTER, UNCHANGED, NOT_COMPARABLE)
WORSE, BETTER = "worse", "better"
ALPHA = 0.05
DEFAULT_SOURCE = "default"


@dataclass
class FigureChange:
    figure: str                      # one of bench.analysis.figures.FIGURES
    baseline: float | None           # median of the ok samples (error rate: their mean)
    candidate: float | None
    change: float | None             # relative (req/s, p99) or absolute (error rate)
    ratio: float | None              # candidate / baseline (relative figures)
    ci: tuple[float, float] | None   # 95 % bootstrap interval of the ratio
    p_value: float | None            # Mann-Whitney U, two-sided; None when weak
    threshold: float
    threshold_source: str            # "default" or the calibration file it came from
    weak: bool = False               # decided by the threshold alone (too few samples)
    direction: str | None = None     # "worse", "better" or None (did not move)
    samples: tuple[int, int] = (0, 0)
    samples_needed: int | None = None  # per side, for the test to be able to decide

    def text(self) -> str:
        """'req/s -12.0 %', 'p99 +41.0 %', 'error rate +0.05 pp'."""
        if self.change is None:
            return f"{self.figure} -"
        if self.figure in counted.COUNTED:      # counted, not sampled: finer steps
            return f"{self.figure} {self.change * 100:+.2f} %"
        if RELATIVE[self.figure]:
            return f"{self.figure} {self.change * 100:+.1f} %"
        return f"{self.figure} {self.change * 100:+.2f} pp"


@dataclass
class CaseComparison:
    id: str
    server: str
    database: str
    orm: bool
    test: str
    verdict: str
    reason: str | None = None
    baseline_rps: float | None = None
    candidate_rps: float | None = None
    rps_ratio: float | None = None
    rps_ratio_ci: tuple[float, float] | None = None
    p99_ratio: float | None = None
    p99_ratio_ci: tuple[float, float] | None = None
    p_value: float | None = None     # the req/s test's
    samples: tuple[int, int] = (0, 0)
    weak: bool = False               # the verdict rests on weak figures only
    figures: list[FigureChange] = field(default_factory=list)
    n: int | None = None             # the suite's rows per request (part of the case id)

    @property
    def title(self) -> str:
        """The test as the tables name it: "queries n=20", "get user"."""
        return suite.title(self.test, self.n)

    @property
    def moved(self) -> list[str]:
        """The figures that moved (decisively or weakly), worse ones first."""
        return [f.figure for f in sorted(self.figures, key=lambda f: f.direction != WORSE)
                if f.direction is not None]

    def figure(self, name: str) -> FigureChange | None:
        return next((f for f in self.figures if f.figure == name), None)


@dataclass
class Comparison:
    baseline: str
    candidate: str
    threshold: float                 # the default thresholds (req/s; and below, each figure)
    alpha: float
    run_reasons: list[str] = field(default_factory=list)   # why nothing is comparable
    cases: list[CaseComparison] = field(default_factory=list)
    calibration: str | None = None   # the calibration file used
    calibration_note: str | None = None   # why it was ignored, or what to know about it
    thresholds: dict[str, float] = field(default_factory=lambda: dict(DEFAULTS))
    # the runs' noise differs widely (comparability.noise_differences): verdicts weak unless
    # req/s moved by more than the noise could explain (beyond_noise)
    noise_reasons: list[str] = field(default_factory=list)
    # server -> its dependencies whose versions differ between the runs ("sanic 25.12.1
    # → 23.6.0"): not a reason to refuse the comparison, what explains a verdict
    dependency_changes: dict[str, list[str]] = field(default_factory=dict)

    @property
    def regressed(self) -> list[CaseComparison]:
        """Cases decisively worse in some figure; weak verdicts never count."""
        return [c for c in self.cases if c.verdict == SLOWER and not c.weak]

    @property
    def broken(self) -> list[CaseComparison]:
        return [c for c in self.cases if c.verdict == BROKEN]

    @property
    def weak(self) -> list[CaseComparison]:
        """Cases whose only movement is weak: shown, warned about, never failing."""
        return [c for c in self.cases if c.weak]

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in VERDICTS}
        for c in self.cases:
            out[c.verdict] += 1
        return out

    def as_dict(self) -> dict:
        d = asdict(self)
        if not self.noise_reasons:      # older comparisons' JSON stays as it was
            del d["noise_reasons"]
        if not self.dependency_changes:
            del d["dependency_changes"]
        if not any(f.figure in counted.COUNTED for c in self.cases for f in c.figures):
            for figure in counted.COUNTED:  # runs without counts: their JSON as it was
                d["thresholds"].pop(figure, None)
        d["counts"] = self.counts()
        for row, case in zip(d["cases"], self.cases):
            row["moved"] = case.moved
            if case.n is None:          # older results' JSON stays as it was
                del row["n"]
        return d


def ratio_ci(base: list[float], cand: list[float]) -> tuple[float, float] | None:
    """95 % percentile-bootstrap interval of median(cand) / median(base), resampling the
    two sides independently."""
    from scipy import stats as scistats   # imported here: see statistics.median_ci
    if len(base) < 2 or len(cand) < 2 or np.median(base) == 0:
        return None
    if len(set(base)) == 1 and len(set(cand)) == 1:
        r = cand[0] / base[0]
        return r, r

    def stat(b, c, axis=-1):
        return np.median(c, axis=axis) / np.median(b, axis=axis)
    res = scistats.bootstrap((np.asarray(base, float), np.asarray(cand, float)), stat,
                             confidence_level=statistics.CONFIDENCE, method="percentile",
                             n_resamples=statistics.BOOTSTRAP_RESAMPLES, vectorized=True,
                             paired=False, rng=np.random.default_rng(statistics.BOOTSTRAP_SEED))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def smallest_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided p an exact Mann-Whitney U test can give for these sizes:
    with 3 samples a side it is 0.1, so such a test can never pass p < 0.05."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return min(1.0, 2 / comb(n1 + n2, n1))


def samples_needed(alpha: float) -> int:
    """The smallest n with which n samples a side can reach p < alpha (4 for 0.05)."""
    n = 1
    while smallest_p_value(n, n) >= alpha:
        n += 1
    return n


def decide(change: float, threshold: float, p_value: float | None, weak: bool,
           worse_when: str, alpha: float = ALPHA) -> str | None:
    """Did one figure move, and which way? "worse", "better" or None. It moved when the
    change passes the threshold and the test is significant (p < alpha); a weak figure
    (no test could decide) is judged by the threshold alone. `change` is candidate minus
    baseline, relative or absolute; `worse_when` "lower" or "higher". The paired analysis
    of `ab` calls this with its own p-value: one rule for both."""
    if abs(change) <= threshold:
        return None
    if not weak and (p_value is None or p_value >= alpha):
        return None
    return WORSE if (change < 0) == (worse_when == "lower") else BETTER


def figure_change(figure: str, base: list[float], cand: list[float], *, threshold: float,
                  threshold_source: str, alpha: float) -> FigureChange | None:
    """One figure judged from the two sides' per-sample values (None: no values)."""
    from scipy import stats as scistats   # imported here: see statistics.median_ci
    if not base or not cand:
        return None
    relative = RELATIVE[figure]
    centre = np.median if relative else np.mean    # a rate that is mostly 0: its mean
    b, c = float(centre(base)), float(centre(cand))
    if relative:
        ratio = c / b if b else None
        change = ratio - 1 if ratio is not None else None
    else:
        ratio, change = None, c - b
    row = FigureChange(figure, b, c, change, ratio, ratio_ci(base, cand) if relative else None,
                       None, threshold, threshold_source, samples=(len(base), len(cand)))
    row.weak = smallest_p_value(len(base), len(cand)) >= alpha
    if row.weak:
        row.samples_needed = samples_needed(alpha)
    elif base == cand:
        row.p_value = 1.0
    else:
        row.p_value = float(scistats.mannwhitneyu(cand, base, alternative="two-sided").pvalue)
    if change is not None:
        row.direction = decide(change, threshold, row.p_value, row.weak, WORSE_WHEN[figure],
                               alpha)
    return row


def counted_changes(base_case: dict, cand_case: dict,
                    thresholds: dict[str, tuple[float, str]]) -> list[FigureChange]:
    """--instructions' figures of a case counted in both runs, the same way (method, tool,
    N, warm-up, workers): no rank test, a count does not scatter as samples do; a change
    counts past its threshold (a calibration's A/A one, or the default) and past
    NOISE_MULTIPLE times the spread of either run's counts (bench.analysis.instructions)."""
    if not counted.count_of(base_case) or not counted.count_of(cand_case) \
            or counted.comparable(base_case, cand_case):
        return []
    out = []
    for figure in counted.COUNTED:
        base, cand = counted.values(base_case, figure), counted.values(cand_case, figure)
        if not base or not cand:
            continue
        threshold, source = thresholds[figure]
        judged = counted.judge(figure, base, cand, threshold=threshold, source=source)
        out.append(FigureChange(figure, judged.baseline, judged.candidate, judged.change,
                                judged.candidate / judged.baseline if judged.baseline else None,
                                None, None, judged.threshold, judged.threshold_source,
                                direction=judged.direction, samples=judged.counts))
    return out


def verdict_of(figures: list[FigureChange], alpha: float = ALPHA) -> tuple[str, bool, str | None]:
    """(verdict, weak, reason) from the figures: slower when any figure is worse, faster
    when one is better and none worse, unchanged otherwise. Decisive figures decide; weak
    ones only when no figure moved decisively, and the verdict is then weak."""
    decisive = [f for f in figures if f.direction and not f.weak]
    weak = [f for f in figures if f.direction and f.weak]
    for group, is_weak in ((decisive, False), (weak, True)):
        if not group:
            continue
        moved = sorted(group, key=lambda f: f.direction != WORSE)
        verdict = SLOWER if moved[0].direction == WORSE else FASTER
        reason = ", ".join(f.text() + (" (weak)" if f.weak else "") for f in moved)
        if is_weak:
            n = moved[0]
            reason += (f": {n.samples[0]} vs {n.samples[1]} samples cannot reach p < {alpha:g} "
                       f"in a Mann-Whitney U test, so the threshold alone decided; "
                       f"{n.samples_needed} samples a side would make it decisive")
        return verdict, is_weak, reason
    return UNCHANGED, False, None


def _status_reason(case: dict, side: str) -> str:
    return f"{case['status']} in the {side}: {case.get('reason') or ''}".rstrip(": ")


def compare_case(base_case: dict | None, cand_case: dict | None, *,
                 thresholds: dict[str, tuple[float, str]], alpha: float,
                 extra_reasons: list[str]) -> CaseComparison:
    """One case. `thresholds`: figure -> (threshold, where it came from)."""
    ref = cand_case or base_case
    # a sized test as the tables name it ("websocket 32b", "static 64k"): its sizes are
    # rows of their own
    test = workloads.case_title(ref)
    row = CaseComparison(ref["id"], ref["server"], ref["database"], ref["orm"], test,
                         NOT_COMPARABLE, n=(ref.get("key") or {}).get("n"))
    if base_case is None:
        row.reason = "new in the candidate"
        return row
    base_ok = base_case["status"] == "ok"
    if cand_case is None:
        row.verdict = BROKEN if base_ok else NOT_COMPARABLE
        row.reason = "missing in the candidate" + (
            "" if base_ok else f" ({_status_reason(base_case, 'baseline')})")
        return row
    if not base_ok:
        row.reason = _status_reason(base_case, "baseline")
        return row
    if cand_case["status"] != "ok":      # ok before, not now: broken whatever else differs
        row.verdict, row.reason = BROKEN, _status_reason(cand_case, "candidate")
        return row
    if extra_reasons:
        row.reason = "; ".join(extra_reasons)
        return row
    mixes = [(case.get("key") or {}).get("mix") for case in (base_case, cand_case)]
    if mixes[0] != mixes[1]:           # the mixed test under two profiles' weights
        row.reason = f"another mix: {mixes[0]} in the baseline, {mixes[1]} in the candidate"
        return row
    for figure in FIGURES:
        threshold, source = thresholds[figure]
        change = figure_change(figure, ok_values(base_case, figure), ok_values(cand_case, figure),
                               threshold=threshold, threshold_source=source, alpha=alpha)
        if change is not None:
            row.figures.append(change)
    row.figures += counted_changes(base_case, cand_case, thresholds)
    rps, p99 = row.figure(RPS), row.figure(P99)
    if rps is not None:
        row.baseline_rps, row.candidate_rps = rps.baseline, rps.candidate
        row.rps_ratio, row.rps_ratio_ci, row.p_value = rps.ratio, rps.ci, rps.p_value
        row.samples = rps.samples
    if p99 is not None:
        row.p99_ratio, row.p99_ratio_ci = p99.ratio, p99.ci
    row.verdict, row.weak, row.reason = verdict_of(row.figures, alpha)
    return row


def compare(base: dict, cand: dict, *, threshold: float = DEFAULT_THRESHOLD,
            p99_threshold: float = DEFAULT_P99_THRESHOLD,
            error_threshold: float = DEFAULT_ERROR_THRESHOLD, alpha: float = ALPHA,
            calibration: dict | None = None,
            cost_threshold: float = DEFAULT_COST_THRESHOLD,
            start_threshold: float = DEFAULT_START_THRESHOLD,
            memory_threshold: float = DEFAULT_MEMORY_THRESHOLD,
            instructions_threshold: float = counted.DEFAULT_THRESHOLDS[counted.INSTRUCTIONS],
            syscalls_threshold: float = counted.DEFAULT_THRESHOLDS[counted.SYSCALLS]
            ) -> Comparison:
    """Every case of either run, in the candidate's order then the baseline's leftovers.
    `calibration`: a stored calibration (bench.storage.calibration.load); its per-case
    thresholds replace the defaults when its comparability key matches the baseline's."""
    statistics.refresh(base)
    statistics.refresh(cand)
    base_key, cand_key = comparability.key(base), comparability.key(cand)
    defaults = {RPS: threshold, P99: p99_threshold, ERROR_RATE: error_threshold,
                COST: cost_threshold, START: start_threshold, MEMORY: memory_threshold,
                counted.INSTRUCTIONS: instructions_threshold,
                counted.SYSCALLS: syscalls_threshold}
    calibrated, note = noise.usable_thresholds(calibration, base_key)
    source = (calibration or {}).get("path", "the calibration")
    result = Comparison(base["run_id"], cand["run_id"], threshold, alpha,
                        comparability.run_differences(base_key, cand_key),
                        calibration=source if calibrated is not None else None,
                        calibration_note=note, thresholds=defaults)
    base_cases = {c["id"]: c for c in base["cases"]}
    cand_cases = {c["id"]: c for c in cand["cases"]}
    for case_id in list(cand_cases) + [i for i in base_cases if i not in cand_cases]:
        b, c = base_cases.get(case_id), cand_cases.get(case_id)
        engine = (c or b)["database"]
        per_case = (calibrated or {}).get(case_id, {})
        thresholds = {f: (per_case[f], source) if f in per_case
                      else (defaults[f], DEFAULT_SOURCE) for f in FIGURES + counted.COUNTED}
        db_reasons = ([] if engine == "none" else
                      comparability.database_differences(base_key, cand_key, engine))
        result.cases.append(compare_case(b, c, thresholds=thresholds, alpha=alpha,
                                         extra_reasons=result.run_reasons + db_reasons))
    result.dependency_changes = comparability.server_dependency_changes(base, cand)
    result.noise_reasons = comparability.noise_differences(base, cand)
    if result.noise_reasons:
        margin = comparability.NOISE_EXPLAINS * comparability.noise_gap(base, cand)
        for row in result.cases:
            if row.verdict in (SLOWER, FASTER) and not beyond_noise(row, margin) \
                    and not counted_moved(row):
                row.weak = True
                row.reason = (f"{row.reason} (weak: the runs' noise differs: "
                              f"{'; '.join(result.noise_reasons)})")
    return result


def counted_moved(row: CaseComparison) -> bool:
    """Did a counted figure (instructions, system calls per request) move decisively,
    the verdict's way? A count is not a sample: how busy the machine was does not move
    it, so unequally quiet runs do not weaken a verdict it gives."""
    way = WORSE if row.verdict == SLOWER else BETTER
    return any(f.figure in counted.COUNTED and not f.weak and f.direction == way
               for f in row.figures)


def beyond_noise(row: CaseComparison, margin: float) -> bool:
    """Did req/s move decisively, the verdict's way, by more than `margin` (what the
    difference in the runs' noise could explain)? Latency tails and errors react to
    noise out of proportion, so only throughput can outweigh it."""
    rps = row.figure(RPS)
    way = WORSE if row.verdict == SLOWER else BETTER
    return (rps is not None and not rps.weak and rps.direction == way
            and rps.change is not None and abs(rps.change) > margin)

