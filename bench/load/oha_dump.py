"""oha's per-request SQLite dump (`--db-url FILE`): the whole latency distribution of a
window (fixed-rate or closed-loop), and which requests of a fixed rate were sent late.

oha's JSON report gives a dozen percentiles and no histogram. Its dump (oha 1.16, table
`oha`) holds one row per response (errors have none), times in seconds from the run's
start:

    url, start, start_latency_correction, end, duration, status, len_bytes, run

- `start_latency_correction`: when the request was due by the schedule (-q RATE with
  --latency-correction: the ticker's time for it); `start`: when oha really sent it;
  `duration` = end - start_latency_correction (checked against the JSON's percentiles).
- latency from the due time (end - due) is what --latency-correction reports: the wait
  for a free connection counts, so coordinated omission is corrected; latency from the
  send time (end - start) is the uncorrected figure other tools print.
- a request is late when it went out more than LATE_TOLERANCE_S after it was due.
- in the closed loop (no -q, no --latency-correction) oha leaves
  `start_latency_correction` NULL: every latency is from the send time, there is nothing
  to correct and no due time to be late for (late None), and the summary gets no
  uncorrected percentiles (they would be its own).

The JSON report stays the source of counts and errors; this module only adds the
distribution. A dump that cannot be read is a DumpError: the caller stores the sample
without a histogram and says why.

Public API::

    LATE_TOLERANCE_S, DumpError
    read_dump(path, late_tolerance_s=LATE_TOLERANCE_S) -> dict
    paths(host, tmp) -> (dump on the host, local copy)
    collect(host, dump, local) -> dict | DumpError
    add_distribution(summary, distribution) -> None
"""
from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from bench.core import histogram

# A request sent within 1 ms of its due time is on time: tokio's timer and a busy
# connection's hand-over jitter by well under a millisecond on an idle machine, while a
# request that waited for a free connection waits at least one response time.
LATE_TOLERANCE_S = 0.001
# a row without a due time (no --latency-correction) is timed from its send
_QUERY = "SELECT start, coalesce(start_latency_correction, start), end FROM oha"
_DUE_TIMES = "SELECT count(start_latency_correction) FROM oha"


class DumpError(RuntimeError):
    """oha's SQLite dump is missing or not the table oha 1.16 writes."""


def read_dump(path: Path | str, late_tolerance_s: float = LATE_TOLERANCE_S) -> dict:
    """From oha's dump: {"rows": responses in it,
    "latency_histogram": the stored histogram of latency from the due time,
    "latency_uncorrected_ms": p50 .. p99_9, min, mean, max from the send time,
    "late": responses sent more than `late_tolerance_s` after their due time}.
    Without --latency-correction (no due times) both latencies are from the send time and
    late is None."""
    path = Path(path)
    if not path.is_file():
        raise DumpError(f"oha wrote no dump at {path}")
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            rows = conn.execute(_QUERY).fetchall()
            (due_times,) = conn.execute(_DUE_TIMES).fetchone()
    except sqlite3.Error as exc:
        raise DumpError(f"oha's dump {path.name} cannot be read: {exc}") from None
    try:
        start, due, end = np.array(rows, dtype=float).reshape(-1, 3).T
    except (TypeError, ValueError):
        raise DumpError(f"oha's dump {path.name} has a row without its times") from None
    if np.isnan(start).any() or np.isnan(end).any():
        raise DumpError(f"oha's dump {path.name} has a row without start or end")
    corrected, clamped = _histogram(end - due)
    uncorrected, _ = _histogram(end - start)
    return {"rows": len(rows),
            "latency_histogram": histogram.to_record(corrected, clamped),
            "latency_uncorrected_ms": histogram.percentiles_ms(uncorrected),
            "late": int(np.count_nonzero(start - due > late_tolerance_s)) if due_times else None}


def _histogram(seconds: np.ndarray):
    """The histogram of latencies in seconds, counted per whole µs first: one record call
    per distinct value instead of one per response (a long window has millions)."""
    values, counts = np.unique(np.maximum(0, np.rint(seconds * 1e6)).astype(np.int64),
                               return_counts=True)
    return histogram.from_counts(zip(values.tolist(), counts.tolist()))


def paths(host, tmp: Path) -> tuple[str | Path, Path]:
    """Where oha writes its dump on `host` (--db-url) and where it is read here: the same
    temporary file on this machine, a file of the host's own on a remote one."""
    local = tmp / "oha.db"
    if getattr(host, "remote", False):
        return host.path(f"remote-tmp/{tmp.name}-oha.db"), local
    return local, local


def collect(host, dump: str | Path, local: Path) -> dict | DumpError:
    """The dump oha wrote on `host` (a remote one is copied to `local` first, then
    removed there), read; or the DumpError saying why it cannot be."""
    try:
        if str(dump) != str(local):
            try:
                host.get(dump, local)
            except Exception as exc:        # noqa: BLE001 - any transport failure
                raise DumpError(f"oha's dump could not be copied from the load "
                                f"generator's host: {exc}") from None
            finally:
                host.run(["rm", "-f", str(dump)], timeout=30)
        return read_dump(local)
    except DumpError as exc:
        return exc


def add_distribution(summary: dict, distribution: dict | DumpError) -> None:
    """Fill an oha summary (bench.load.oha.parse_oha_json) from its read dump: the
    histogram, and for the open model (a summary with a rate block) the uncorrected
    percentiles and rate.late; or, when the dump could not be read, a None histogram and
    `latency_histogram_error` saying why (every other figure stays)."""
    if isinstance(distribution, DumpError):
        summary["latency_histogram"] = None
        summary["latency_histogram_error"] = str(distribution)
        return
    summary["latency_histogram"] = distribution["latency_histogram"]
    if "rate" in summary:
        summary["latency_uncorrected_ms"] = distribution["latency_uncorrected_ms"]
        summary["rate"]["late"] = distribution["late"]
        summary["rate"]["late_tolerance_ms"] = LATE_TOLERANCE_S * 1000
    if distribution["rows"] != summary["requests"]:
        summary["latency_histogram_error"] = (
            f"oha's dump holds {distribution['rows']} responses, its report "
            f"{summary['requests']}: the histogram may miss some")
