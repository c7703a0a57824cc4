"""A case's latency percentiles from its samples' whole distributions.

The median of the samples' p99s is not the case's p99: one sample whose slowest 1-5 %
of requests took 30 ms instead of 1 ms has a slow p99 of its own, but the median of
three samples' p99s is a fast sample's, and the slow requests vanish. Merging the
samples' latency histograms (bench.core.histogram: HdrHistogram, added count by count)
gives the distribution of every request of the case, and its percentiles are the case's.

- merged percentiles p50, p75, p90, p99, p99.9 and max, read as HdrHistogram reads them
  (the value at rank max(1, int(p/100 * total + 0.5)), as the highest value equivalent
  to it within the 3 significant digits);
- a 95 % interval of each: a percentile bootstrap over samples (resample the ok samples
  with replacement, merge, read the percentile; a fixed seed, so a stored run always
  gives the same interval). Samples, not requests, are what is independent: requests of
  one sample share its server start, its warm caches and its moment on the machine.
- a case whose ok samples do not all carry a histogram (results stored before there
  were any, or one whose dump could not be read) keeps the median of the samples'
  percentiles, and says so: `latency_source` is "merged" or "median of samples".

Pure functions of stored figures; nothing here measures anything.
"""
from __future__ import annotations

import copy
import functools
import json

import numpy as np

from bench.core import histogram

MERGED, MEDIAN_OF_SAMPLES = "merged", "median of samples"
CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 1999
BOOTSTRAP_SEED = 20240101        # fixed: the same samples always give the same interval
_CHUNK = 250                     # resamples merged at once
POINTS = (*histogram.PERCENTILE_POINTS, ("max", 100.0))
# the percentile curve a chart draws from the merged distribution: up to five nines
CURVE_PERCENTILES = (0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
                     99.99, 99.999)


def sample_histograms(samples: list[dict]):
    """The decoded histogram of each sample's summary, or None when any lacks one (or
    cannot be read): merging only some samples would misstate the case."""
    out = []
    for sample in samples:
        record = (sample.get("summary") or {}).get("latency_histogram")
        if not record:
            return None
        try:
            out.append(histogram.from_record(record))
        except histogram.HistogramError:
            return None
    return out or None


def merge(hists: list):
    """One histogram holding every value of `hists` (HdrHistogram.add)."""
    merged = histogram.new()
    for hist in hists:
        merged.add(hist)
    return merged


def _value_at(merged, percentile: float) -> float:
    if percentile >= 100.0:
        return merged.get_max_value() / 1000.0
    return merged.get_value_at_percentile(percentile) / 1000.0


def _bucket_counts(hists: list) -> tuple[np.ndarray, np.ndarray]:
    """(bucket values µs ascending, counts: samples x buckets) over the buckets any sample
    recorded; each value the bucket's highest equivalent, as HdrHistogram reports it.
    Every histogram has the one configuration of bench.core.histogram, so their counts
    arrays share one index: they are read as arrays, not value by value."""
    length = hists[0].counts_len
    if any(h.counts_len != length for h in hists):
        raise histogram.HistogramError("latency histograms of different configurations")
    counts = np.stack([np.frombuffer(h.counts, dtype=np.uint64, count=length)
                       for h in hists]).astype(float)
    used = np.flatnonzero(counts.sum(axis=0))
    reference = hists[0]
    values = np.array([reference.get_highest_equivalent_value(
        reference.get_value_from_index(int(i))) for i in used], dtype=float)
    return values, counts[:, used]


def _percentiles_of(values: np.ndarray, counts: np.ndarray, cumulative: np.ndarray,
                    percentile: float) -> np.ndarray:
    """The percentile of each row of merged `counts` (resamples x buckets; `cumulative`
    their running sums), by HdrHistogram's rule (see the module docstring)."""
    if percentile >= 100.0:
        last = counts.shape[1] - 1 - np.argmax(counts[:, ::-1] > 0, axis=1)
        return values[last] / 1000.0
    ranks = np.maximum(1, np.floor(percentile / 100.0 * cumulative[:, -1] + 0.5))
    found = (cumulative < ranks[:, None]).sum(axis=1)    # the first bucket reaching it
    return values[found] / 1000.0


def bootstrap_intervals(hists: list, confidence: float = CONFIDENCE,
                        resamples: int = BOOTSTRAP_RESAMPLES,
                        seed: int = BOOTSTRAP_SEED) -> dict:
    """{key: [low, high] ms} for every point of POINTS: the percentile bootstrap over
    samples. None for each below two samples (one sample says nothing of the spread)."""
    if len(hists) < 2:
        return {key: None for key, _ in POINTS}
    values, counts = _bucket_counts(hists)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(hists), size=(resamples, len(hists)))
    # how often each sample is drawn in each resample: merged counts = weights @ counts
    weights = np.zeros((resamples, len(hists)))
    np.add.at(weights, (np.arange(resamples)[:, None], picks), 1)
    estimates: dict[str, list] = {key: [] for key, _ in POINTS}
    for start in range(0, resamples, _CHUNK):       # bounded memory: chunk x buckets
        merged = weights[start:start + _CHUNK] @ counts
        cumulative = np.cumsum(merged, axis=1)
        for key, percentile in POINTS:
            estimates[key].append(_percentiles_of(values, merged, cumulative, percentile))
    tail = (1 - confidence) / 2 * 100
    return {key: [float(v) for v in np.percentile(np.concatenate(found), [tail, 100 - tail])]
            for key, found in estimates.items()}


def case_latency(ok_samples: list[dict]) -> dict | None:
    """The merged figures of a case's ok samples, or None when they cannot be merged
    (see sample_histograms):
    {"latency_ms": {p50, p75, p90, p99, p99_9, max}, "latency_ci_ms": {same: [lo, hi] or
     None}, "latency_curve": [[percentile, ms], ...], "latency_source": "merged",
     "latency_count": values merged}.

    Remembered per set of stored histograms: a run re-derives every case's figures each
    time it saves (after every sample), and decoding plus the bootstrap cost ~0.15 s a
    case, while only the case just measured has new samples."""
    records = [(s.get("summary") or {}).get("latency_histogram") for s in ok_samples]
    if not records or not all(records):
        return None
    found = _case_latency(tuple(json.dumps(r, sort_keys=True) for r in records))
    return copy.deepcopy(found)


@functools.lru_cache(maxsize=512)       # a full matrix has ~250 cases
def _case_latency(stored: tuple[str, ...]) -> dict | None:
    hists = sample_histograms([{"summary": {"latency_histogram": json.loads(r)}}
                               for r in stored])
    if hists is None:
        return None
    merged = merge(hists)
    if merged.get_total_count() == 0:
        return None
    return {"latency_ms": {key: _value_at(merged, p) for key, p in POINTS},
            "latency_ci_ms": bootstrap_intervals(hists),
            "latency_curve": [[p, _value_at(merged, p)] for p in CURVE_PERCENTILES],
            "latency_source": MERGED,
            "latency_count": merged.get_total_count()}
