"""The latency histogram a sample stores: one type (HdrHistogram, the `hdrhistogram`
package), one unit, range and precision, and one stored form.

Stored form (`summary.latency_histogram` in results.json)::

    {"encoding": "hdr-base64", "unit": "us", "lowest": 1, "highest": 60000000,
     "digits": 3, "count": <values recorded>, "clamped": <values above highest>,
     "data": "HISTF..."}

`data` is HdrHistogram's own `encode()`: base64 of the compressed standard HDR payload,
readable by every HdrHistogram implementation (Java, C, Go, ...). A few kB per sample.

The range and precision, and why:
- unit microseconds, lowest 1 µs: wrk counts latency per whole microsecond, so nothing
  finer exists to keep; oha's nanoseconds are rounded to it.
- highest 60 s: above any --timeout the harness uses (wrk records nothing beyond its
  timeout; oha's latency from the due time can exceed it by the wait for a connection,
  still far below a minute). A larger value is clamped to 60 s and counted in `clamped`.
- 3 significant digits: every value is kept within 0.1 % (exact below 2048 µs). That is
  finer than the run-to-run noise of any percentile (several %), and keeps the histogram
  to ~16 k counters in memory and a few kB encoded.
"""
from __future__ import annotations

from typing import Iterable

from hdrh.histogram import HdrHistogram

ENCODING = "hdr-base64"
UNIT = "us"
LOWEST_US = 1
HIGHEST_US = 60_000_000
DIGITS = 3
# the percentiles a case reports, as (summary key, percentile)
PERCENTILE_POINTS = (("p50", 50.0), ("p75", 75.0), ("p90", 90.0), ("p99", 99.0),
                     ("p99_9", 99.9))


class HistogramError(ValueError):
    """A stored latency histogram that cannot be read (names what is wrong)."""


def new() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, DIGITS)


def record(hist: HdrHistogram, value_us: int, count: int = 1) -> int:
    """Record `count` values of `value_us`; returns how many were above the range (they
    are recorded as the highest value)."""
    if value_us < 0:
        raise HistogramError(f"a negative latency: {value_us} us")
    clamped = count if value_us > HIGHEST_US else 0
    hist.record_value(min(int(value_us), HIGHEST_US), int(count))
    return clamped


def from_counts(pairs: Iterable[tuple[int, int]]) -> tuple[HdrHistogram, int]:
    """A histogram of (value µs, count) pairs, and how many values were above its range."""
    hist, clamped = new(), 0
    for value, count in pairs:
        if count > 0:
            clamped += record(hist, value, count)
    return hist, clamped


def to_record(hist: HdrHistogram, clamped: int = 0) -> dict:
    """The stored form of a histogram (see the module docstring)."""
    return {"encoding": ENCODING, "unit": UNIT, "lowest": LOWEST_US, "highest": HIGHEST_US,
            "digits": DIGITS, "count": hist.get_total_count(), "clamped": clamped,
            "data": hist.encode().decode("ascii")}


def from_record(record: dict) -> HdrHistogram:
    """The histogram of a stored record; HistogramError names what is wrong."""
    if not isinstance(record, dict):
        raise HistogramError(f"a latency histogram must be an object, got {record!r:.80}")
    for key, want in (("encoding", ENCODING), ("unit", UNIT)):
        if record.get(key) != want:
            raise HistogramError(f"latency histogram {key} {record.get(key)!r}, "
                                 f"expected {want!r}")
    try:
        hist = HdrHistogram.decode(record["data"])
    except Exception as exc:         # hdrh raises assorted types on bad payloads
        raise HistogramError(f"latency histogram data cannot be decoded: {exc!r:.200}") \
            from None
    if record.get("count") is not None and hist.get_total_count() != record["count"]:
        raise HistogramError(f"latency histogram holds {hist.get_total_count()} values, "
                             f"its record says {record['count']}")
    return hist


def percentiles_ms(hist: HdrHistogram) -> dict:
    """p50 .. p99_9, min, max and mean in milliseconds (None when the histogram is empty).
    Each percentile is the highest value equivalent (within the precision) to the value
    at that rank, as HdrHistogram reads it."""
    if hist.get_total_count() == 0:
        return {key: None for key in ("min", "mean", "max", *dict(PERCENTILE_POINTS))}
    out = {key: hist.get_value_at_percentile(p) / 1000.0 for key, p in PERCENTILE_POINTS}
    out.update(min=hist.get_min_value() / 1000.0, mean=hist.get_mean_value() / 1000.0,
               max=hist.get_max_value() / 1000.0)
    return out


def resolution_us(value_us: float) -> float:
    """The width of the bucket holding `value_us`: how far apart two values the histogram
    cannot tell apart may be."""
    hist = new()
    value = max(0, min(int(value_us), HIGHEST_US))
    return hist.get_highest_equivalent_value(value) - hist.get_lowest_equivalent_value(value) + 1
