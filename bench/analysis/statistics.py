"""Per-case statistics over repeated samples, and the verdicts built on them.

Pure functions of stored figures (tested on numbers alone): the spread of a case's
samples, its confidence interval, whether it is unstable, its status as a whole, and
which rows of a ranking are statistical ties. Rendering and comparison call these on
stored JSON; nothing here measures anything.
"""
from __future__ import annotations

import hashlib
import json
import statistics as pystats
from dataclasses import asdict, dataclass

import numpy as np

from bench.analysis import latency as latency_merge

CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 9999
BOOTSTRAP_SEED = 20240101        # fixed: the same samples always give the same interval
# Samples that were never measured do not count against a case; every other non-ok
# status does, the most serious first.
SEVERITY = ("verification failed", "failed", "invalid")
NOT_MEASURED = ("pending", "interrupted")
PERCENTILES = ("p50", "p75", "p90", "p99", "p99_9")


@dataclass
class Spread:
    n: int
    median: float | None
    min: float | None
    max: float | None
    mean: float | None
    stdev: float | None          # sample standard deviation (n - 1); None below 2 samples
    cv: float | None             # stdev / mean
    ci_low: float | None         # 95 % confidence interval of the median; None below 2 samples
    ci_high: float | None

    def as_dict(self) -> dict:
        return asdict(self)

    def overlaps(self, other: "Spread") -> bool | None:
        """Do the two confidence intervals overlap? None when either has none."""
        if None in (self.ci_low, self.ci_high, other.ci_low, other.ci_high):
            return None
        return self.ci_low <= other.ci_high and other.ci_low <= self.ci_high


def median_ci(values: list[float], confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Percentile-bootstrap confidence interval of the median (scipy.stats.bootstrap).

    The percentile method, not BCa: with the 3-10 samples a benchmark affords, BCa's
    jackknife acceleration is degenerate (ties, identical values) and fails, while the
    percentile interval stays defined and is honest about how little 3 samples say."""
    if len(values) < 2:
        return None
    data = np.asarray(values, dtype=float)
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])
    # imported here, not at the top, and only once an interval is due: scipy.stats costs
    # 1-2 s of CPU to import, which every command that computes no interval (verify,
    # list, exit 2, a run of one sample per case) would pay
    from scipy import stats as scistats
    res = scistats.bootstrap((data,), np.median, confidence_level=confidence,
                             n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
                             vectorized=True, rng=np.random.default_rng(BOOTSTRAP_SEED))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def spread(values: list[float]) -> Spread:
    values = [float(v) for v in values if v is not None]
    n = len(values)
    if n == 0:
        return Spread(0, None, None, None, None, None, None, None, None)
    mean = pystats.fmean(values)
    stdev = pystats.stdev(values) if n >= 2 else None
    cv = (stdev / mean) if stdev is not None and mean else None
    ci = median_ci(values)
    return Spread(n, pystats.median(values), min(values), max(values), mean, stdev, cv,
                  ci[0] if ci else None, ci[1] if ci else None)


def paired_ratio(a: list[float | None], b: list[float | None]) -> Spread:
    """B over A, round by round: `a[k]` and `b[k]` were measured in the same interleaved
    round k (bench.core.plan), so each round's ratio cancels what the round shared (heat,
    a neighbour's load) and the interval of their median is the interval of the effect.
    A round where either side has no value is left out."""
    return spread([y / x for x, y in zip(a, b) if x and y is not None])


def is_unstable(s: Spread, threshold: float) -> bool:
    return s.cv is not None and s.cv > threshold


def case_status(samples: list[dict]) -> tuple[str, str | None, list[str]]:
    """(status, reason, notes) of a case from its samples' statuses.

    ok: every measured sample is ok. Otherwise the most serious non-ok status, with how
    many samples it hit and the first one's reason: a case with one bad sample out of
    five is not shown as a clean figure. Samples never measured (run interrupted, or
    still running) only shorten the series, and the notes say so."""
    measured = [s for s in samples if s["status"] not in NOT_MEASURED]
    notes = []
    if not measured:
        if any(s["status"] == "interrupted" for s in samples):
            return "interrupted", "run interrupted before this case was measured", notes
        return "pending", None, notes
    if len(measured) < len(samples):
        notes.append(f"{len(measured)} of {len(samples)} samples measured "
                     f"(the run stopped before the others)")
    for status in SEVERITY:
        bad = [s for s in measured if s["status"] == status]
        if bad:
            reason = bad[0].get("reason") or status
            if len(measured) > 1:
                reason = f"{len(bad)} of {len(measured)} samples {status}: {reason}"
            return status, reason, notes
    return "ok", None, notes


def _median_of(samples: list[dict], getter) -> float | None:
    values = []
    for s in samples:
        try:
            v = getter(s)
        except (KeyError, TypeError):
            v = None
        if v is not None:
            values.append(v)
    return pystats.median(values) if values else None


def resource_summary(samples: list[dict]) -> dict:
    """Per group (server, database, client): median of mean cores, the highest peak, and
    the median and highest memory; plus requests per server CPU-second."""
    out: dict = {}
    for group in ("server", "database", "client"):
        have = [s for s in samples if (s.get("resources") or {}).get(group)]
        if not have:
            continue
        r = lambda s, k: s["resources"][group].get(k)  # noqa: E731
        peaks = [r(s, "peak_cores") for s in have if r(s, "peak_cores") is not None]
        mems = [r(s, "memory_peak_mb") for s in have if r(s, "memory_peak_mb") is not None]
        out[group] = {
            "mean_cores": _median_of(have, lambda s: r(s, "mean_cores")),
            "peak_cores": max(peaks) if peaks else None,
            "memory_mb": _median_of(have, lambda s: r(s, "memory_mean_mb")),
            "memory_peak_mb": max(mems) if mems else None,
            "memory_kind": next((r(s, "memory_kind") for s in have if r(s, "memory_kind")), None),
        }
    out["requests_per_server_cpu_s"] = _median_of(samples, _requests_per_server_cpu_s)
    cost = cost_summary(samples)
    if cost:                  # runs stored before cost was measured render as they did
        out["cost"] = cost
    return out


COST_ROLES = ("server", "database", "proxy", "client")


def cost_summary(samples: list[dict]) -> dict:
    """Per role: the median CPU-µs per request, PSS (median of the means, MiB) and how
    the CPU was measured; the machine's busy CPU-µs per request beside them. {} when no
    sample has the figures."""
    out: dict = {}
    for role in COST_ROLES:
        have = [s["resources"][role] for s in samples
                if ((s.get("resources") or {}).get(role) or {}).get("cpu_us_per_request")
                is not None]
        if have:
            out[role] = {
                "cpu_us_per_request": pystats.median(g["cpu_us_per_request"] for g in have),
                "memory_mb": _median_of(have, lambda g: g["memory_mean_mb"]),
                "accounting": "/".join(sorted({g.get("accounting") or "procfs"
                                               for g in have}))}
    machines = [m for s in samples
                for m in ((s.get("resources") or {}).get("machine") or {}).values()
                if m.get("cpu_us_per_request") is not None]
    if out and machines:
        out["machine_cpu_us_per_request"] = pystats.median(m["cpu_us_per_request"]
                                                           for m in machines)
        # the orchestrator's own share of the machine (its sampler reads every process)
        harness = [m["harness_cpu_s"] * 1e6 / m["requests"] for m in machines
                   if m.get("harness_cpu_s") is not None and m.get("requests")]
        out["harness_cpu_us_per_request"] = round(pystats.median(harness), 1) \
            if harness else None
    return out


def _requests_per_server_cpu_s(sample: dict) -> float | None:
    cpu = ((sample.get("resources") or {}).get("server") or {}).get("cpu_s")
    if not cpu:
        return None
    return sample["summary"]["requests"] / cpu


def summarise_case(samples: list[dict], unstable_cv: float) -> dict:
    """The aggregate of a case: status, spread of req/s, latency percentiles, resources,
    and the verdicts. Only ok samples enter the figures. Latency: the merged
    distribution of the samples' histograms where every ok sample has one
    (`latency_source` "merged", with intervals and a curve: bench.analysis.latency),
    else the median of the samples' percentiles ("median of samples", as every result
    from before histograms). `p99_ms` stays the spread of the samples' own
    p99s: compare's per-sample test needs one value per sample."""
    status, reason, notes = case_status(samples)
    ok = [s for s in samples if s["status"] == "ok" and s.get("summary")]
    rps = spread([s["summary"]["requests_per_sec"] for s in ok])
    latency = {p: _median_of(ok, lambda s, p=p: s["summary"]["latency_ms"][p]) for p in PERCENTILES}
    # the merged distribution where every ok sample has one (bench.analysis.latency)
    merged = latency_merge.case_latency(ok)
    p99 = spread([s["summary"]["latency_ms"]["p99"] for s in ok
                  if s["summary"]["latency_ms"].get("p99") is not None])
    client_bound = sum(1 for s in ok if (s.get("checks") or {}).get("client_bound"))
    errors = sum(s["summary"]["errors"]["total"] for s in ok)
    sent = sum(s["summary"].get("sent") or s["summary"]["requests"] for s in ok)
    out = {
        "status": status, "reason": reason, "notes": notes,
        "samples_ok": len(ok), "samples": len(samples),
        "requests_per_sec": rps.as_dict(),
        "latency_ms": latency,
        "p99_ms": p99.as_dict(),
        "errors": errors, "error_rate": errors / sent if sent else None,
        "unstable": is_unstable(rps, unstable_cv),
        # most of its samples were client-bound: the figure is the load generator's too
        "client_bound": bool(ok) and client_bound * 2 > len(ok),
        "resources": resource_summary(ok),
    }
    out["latency_source"] = latency_merge.MEDIAN_OF_SAMPLES
    if merged:
        out.update(merged)
    return out


def ties(spreads: list[Spread]) -> list[bool | None]:
    """For rows ranked best first: is each row's interval overlapping the row above?
    True: a statistical tie, the order of the two is not supported by the data. None: no
    interval to tell (a single sample). The first row is never a tie with anything above."""
    out: list[bool | None] = [False] if spreads else []
    for above, row in zip(spreads, spreads[1:]):
        out.append(row.overlaps(above))
    return out


def merge_warnings(samples: list[dict]) -> list[str]:
    """One line per kind of warning (the text before its first colon), with how many of
    the measured samples had it: five samples' identical notes would bury the table."""
    measured = [s for s in samples if s["status"] not in NOT_MEASURED]
    kinds: dict[str, tuple[str, int]] = {}
    for s in measured:
        seen = set()
        for w in s.get("warnings", []):
            kind = w.split(":", 1)[0]
            if kind in seen:
                continue
            seen.add(kind)
            first, count = kinds.get(kind, (w, 0))
            kinds[kind] = (first, count + 1)
    if len(measured) <= 1:
        return [first for first, _ in kinds.values()]
    return [f"{count} of {len(measured)} samples: {first}" for first, count in kinds.values()]


def refresh(doc: dict) -> dict:
    """Recompute every case's status, reason, warnings and stats from its samples (with
    the document's own thresholds), so stored verdicts always follow the stored figures."""
    cv = doc["settings"].get("unstable_cv") or 0.10
    for case in doc["cases"]:
        stats = _summary(case["samples"], cv)
        warnings = merge_warnings(case["samples"]) + stats["notes"]
        if stats["unstable"]:
            warnings.append(f"unstable: req/s varies by {stats['requests_per_sec']['cv']:.1%} "
                            f"between samples (CV, threshold {cv:.0%})")
        case.update(status=stats["status"], reason=stats["reason"], warnings=warnings,
                    stats=stats)
    return doc


# refresh runs at every save of a run (after each sample) over every case, and a case's
# bootstrap intervals cost milliseconds: a 100-case document took 2 s to refresh, so a
# run's cost grew with the square of its cases. summarise_case is a pure function of
# the samples and the threshold, so the figures of samples already summarised are taken
# from here (as JSON: the caller's copy is its own to change).
_SUMMARIES: dict[tuple[float, str], str] = {}
_SUMMARIES_KEPT = 4096


def _summary(samples: list[dict], unstable_cv: float) -> dict:
    key = (unstable_cv, hashlib.sha1(json.dumps(samples, sort_keys=True).encode()).hexdigest())
    if key not in _SUMMARIES:
        if len(_SUMMARIES) >= _SUMMARIES_KEPT:
            _SUMMARIES.clear()
        _SUMMARIES[key] = json.dumps(summarise_case(samples, unstable_cv))
    return json.loads(_SUMMARIES[key])
