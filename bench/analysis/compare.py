"""Comparing two stored runs case by case: faster, slower, unchanged, or not comparable.

Pure functions of two results documents (and optional per-case thresholds from a
calibration): nothing is measured here. A change counts only when it passes the
threshold *and* a Mann-Whitney U test on the samples (scipy); with too few samples for
the test to ever reach significance, the threshold alone decides and the verdict says
it is weak.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats as scistats

from bench.analysis import statistics
from bench.core.machine import fingerprint

FASTER, SLOWER, UNCHANGED, NOT_COMPARABLE = "faster", "slower", "unchanged", "not comparable"
DEFAULT_THRESHOLD = 0.05
ALPHA = 0.05
# Settings that shape the figures: a difference in any makes every case incomparable.
SHAPING_SETTINGS = ("workers", "db_connections", "duration", "warmup", "timeout")


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
    p_value: float | None = None
    samples: tuple[int, int] = (0, 0)
    threshold: float = DEFAULT_THRESHOLD
    threshold_source: str = "global"
    weak: bool = False               # decided by the threshold alone (too few samples)


@dataclass
class Comparison:
    baseline: str
    candidate: str
    threshold: float
    alpha: float
    run_reasons: list[str] = field(default_factory=list)   # why nothing is comparable
    cases: list[CaseComparison] = field(default_factory=list)
    calibration: str | None = None

    @property
    def regressed(self) -> list[CaseComparison]:
        return [c for c in self.cases if c.verdict == SLOWER]

    def counts(self) -> dict[str, int]:
        out = {v: 0 for v in (FASTER, SLOWER, UNCHANGED, NOT_COMPARABLE)}
        for c in self.cases:
            out[c.verdict] += 1
        return out

    def as_dict(self) -> dict:
        d = asdict(self)
        d["counts"] = self.counts()
        return d


def machine_id(doc: dict) -> str:
    env = doc.get("environment", {})
    return env.get("machine_id") or fingerprint(env)


ALL_LOCAL = {"client": "local", "server": "local", "database": "local"}


def topology(doc: dict) -> dict:
    """Role -> where it ran; runs from before --hosts ran everything on one machine."""
    return (doc.get("topology") or {}).get("roles") or ALL_LOCAL


def run_level_reasons(base: dict, cand: dict) -> list[str]:
    """What makes the two runs incomparable as a whole (empty: comparable)."""
    reasons = []
    if machine_id(base) != machine_id(cand):
        reasons.append(f"different machine ({machine_id(base)} vs {machine_id(cand)}: "
                       f"{base['environment'].get('cpu_model')}, "
                       f"{base['environment'].get('cpu_count')} CPUs vs "
                       f"{cand['environment'].get('cpu_model')}, "
                       f"{cand['environment'].get('cpu_count')} CPUs)")
    for key in SHAPING_SETTINGS:
        a, b = base["settings"].get(key), cand["settings"].get(key)
        if a != b:
            reasons.append(f"different settings: {key} {a} vs {b}")
    where_base, where_cand = topology(base), topology(cand)
    if where_base != where_cand:
        reasons.append("different topology (which machine ran the client, the server and "
                       f"the database): {where_base} vs {where_cand}")
    bl, cl = base.get("load") or {}, cand.get("load") or {}
    for key in ("generator", "version", "threads"):
        if bl.get(key) != cl.get(key):
            reasons.append(f"different load generator {key}: {bl.get(key)} vs {cl.get(key)}")
    return reasons


def database_reasons(base: dict, cand: dict, engine: str) -> list[str]:
    if engine == "none":
        return []
    a, b = base["databases"].get(engine, {}), cand["databases"].get(engine, {})
    reasons = []
    if a.get("mode") != b.get("mode"):
        reasons.append(f"different database mode for {engine}: {a.get('mode')} vs {b.get('mode')}")
    if a.get("version") != b.get("version"):
        reasons.append(f"different {engine} version: {a.get('version')} vs {b.get('version')}")
    return reasons


def ratio_ci(base: list[float], cand: list[float]) -> tuple[float, float] | None:
    """95 % percentile-bootstrap interval of median(cand) / median(base), resampling the
    two sides independently."""
    if len(base) < 2 or len(cand) < 2:
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
    from math import comb
    return min(1.0, 2 / comb(n1 + n2, n1))


def _ok_values(case: dict, getter) -> list[float]:
    out = []
    for s in case["samples"]:
        if s["status"] == "ok" and s.get("summary"):
            v = getter(s["summary"])
            if v is not None:
                out.append(float(v))
    return out


def compare_case(base_case: dict | None, cand_case: dict | None, *, threshold: float,
                 threshold_source: str, alpha: float, extra_reasons: list[str]) -> CaseComparison:
    ref = cand_case or base_case
    row = CaseComparison(ref["id"], ref["server"], ref["database"], ref["orm"], ref["test"],
                         NOT_COMPARABLE, threshold=threshold, threshold_source=threshold_source)
    if base_case is None or cand_case is None:
        row.reason = f"missing in the {'baseline' if base_case is None else 'candidate'}"
        return row
    for side, case in (("baseline", base_case), ("candidate", cand_case)):
        if case["status"] != "ok":
            row.reason = f"{case['status']} in the {side}: {case.get('reason') or ''}".rstrip(": ")
            return row
    if extra_reasons:
        row.reason = "; ".join(extra_reasons)
        return row
    b = _ok_values(base_case, lambda s: s["requests_per_sec"])
    c = _ok_values(cand_case, lambda s: s["requests_per_sec"])
    bp = _ok_values(base_case, lambda s: s["latency_ms"].get("p99"))
    cp = _ok_values(cand_case, lambda s: s["latency_ms"].get("p99"))
    row.samples = (len(b), len(c))
    row.baseline_rps, row.candidate_rps = float(np.median(b)), float(np.median(c))
    row.rps_ratio = row.candidate_rps / row.baseline_rps
    row.rps_ratio_ci = ratio_ci(b, c)
    if bp and cp:
        row.p99_ratio = float(np.median(cp) / np.median(bp))
        row.p99_ratio_ci = ratio_ci(bp, cp)
    change = row.rps_ratio - 1
    passes_threshold = abs(change) > threshold
    if smallest_p_value(len(b), len(c)) >= alpha:
        row.weak = True
        significant = True          # the test cannot decide: the threshold alone does
        row.reason = (f"{len(b)} vs {len(c)} samples cannot reach p < {alpha:g} in a "
                      f"Mann-Whitney U test: decided by the threshold alone (weak)")
    else:
        row.p_value = float(scistats.mannwhitneyu(c, b, alternative="two-sided").pvalue)
        significant = row.p_value < alpha
    if passes_threshold and significant:
        row.verdict = FASTER if change > 0 else SLOWER
    else:
        row.verdict = UNCHANGED
    return row


def compare(base: dict, cand: dict, *, threshold: float = DEFAULT_THRESHOLD,
            alpha: float = ALPHA, thresholds: dict[str, float] | None = None,
            calibration: str | None = None) -> Comparison:
    """Every case of either run, in the candidate's order then the baseline's leftovers."""
    statistics.refresh(base)
    statistics.refresh(cand)
    result = Comparison(base["run_id"], cand["run_id"], threshold, alpha,
                        run_level_reasons(base, cand), calibration=calibration)
    base_cases = {c["id"]: c for c in base["cases"]}
    cand_cases = {c["id"]: c for c in cand["cases"]}
    for case_id in list(cand_cases) + [i for i in base_cases if i not in cand_cases]:
        b, c = base_cases.get(case_id), cand_cases.get(case_id)
        engine = (c or b)["database"]
        per_case = (thresholds or {}).get(case_id)
        result.cases.append(compare_case(
            b, c, threshold=per_case if per_case is not None else threshold,
            threshold_source="calibrated" if per_case is not None else "global", alpha=alpha,
            extra_reasons=result.run_reasons + database_reasons(base, cand, engine)))
    return result


# ------------------------------------------------------------------ calibration (A/A)

CALIBRATION_FLOOR = 0.02
# The standard error of a median is about 1.2533 sigma / sqrt(n) (normal data), so the
# difference of two medians of n samples has about 1.2533 sigma sqrt(2 / n): the size of
# change that noise alone typically makes between two runs. One such error, not three:
# the Mann-Whitney test already guards significance; the threshold is the effect size
# worth reporting. (Three made every threshold on this machine 20-30 %.)
MEDIAN_SE_FACTOR = 1.2533
SE_MULTIPLE = 1.0
AA_MULTIPLE = 1.5


def aa_threshold(first: list[float], second: list[float], floor: float = CALIBRATION_FLOOR) -> float:
    """The smallest change of median req/s worth calling a change for one case, from two
    runs of the same code on the same machine (A/A): the larger of the floor, 1.5 x the
    difference the two runs showed, and the standard error of a difference of medians
    estimated from the samples' spread."""
    med1, med2 = float(np.median(first)), float(np.median(second))
    observed = abs(med2 / med1 - 1) if med1 else 0.0
    n = min(len(first), len(second))
    cvs = [statistics.spread(v).cv for v in (first, second)]
    cv = max((c for c in cvs if c is not None), default=0.0)
    noise = SE_MULTIPLE * MEDIAN_SE_FACTOR * cv * (2 / n) ** 0.5 if n else 0.0
    return max(floor, AA_MULTIPLE * observed, noise)


def calibrate(first: dict, second: dict, floor: float = CALIBRATION_FLOOR) -> dict[str, float]:
    """Per-case thresholds from two runs of the same selection (cases ok in both)."""
    b = {c["id"]: c for c in first["cases"]}
    out = {}
    for case in second["cases"]:
        other = b.get(case["id"])
        if other is None:
            continue
        x = _ok_values(other, lambda s: s["requests_per_sec"])
        y = _ok_values(case, lambda s: s["requests_per_sec"])
        if x and y and case["status"] == other["status"] == "ok":
            out[case["id"]] = round(aa_threshold(x, y, floor), 4)
    return out
