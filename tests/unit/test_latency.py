"""Latency histograms: the stored codec, what wrk and oha really gave (recorded once by
tests/fixtures/histograms/record.py), the merge and its bootstrap, and a case's
percentiles on a stored run with a slow tail in one sample."""
import json
import math
import sqlite3
from pathlib import Path

import pytest

from bench.analysis import judge, latency, statistics
from bench.core import histogram
from bench.load import oha, oha_dump, wrk
from bench.report import formats, tables
from bench.storage import results

DATA = Path(__file__).resolve().parent / "data"


def hist_of(values: dict[int, int]):
    return histogram.from_counts(values.items())[0]


def value_at_rank(hist, rank: int) -> float:
    """The histogram's value (µs) at a 1-based rank: HdrHistogram reads percentile p at
    rank int(p/100 * total + 0.5), so p = 100 * rank / total lands on it exactly."""
    return hist.get_value_at_percentile(100.0 * rank / hist.get_total_count())


def within_precision(ours: float, theirs: float) -> bool:
    """Equal to the histogram's precision: the same bucket (3 significant digits)."""
    return abs(ours - theirs) < histogram.resolution_us(theirs)


# --------------------------------------------------------------------------- the codec

def test_a_stored_histogram_reads_back_exactly():
    hist = hist_of({120: 5, 950: 3, 48_000: 1})
    record = histogram.to_record(hist)
    assert {k: record[k] for k in ("encoding", "unit", "lowest", "highest", "digits",
                                   "count", "clamped")} == {
        "encoding": "hdr-base64", "unit": "us", "lowest": 1, "highest": 60_000_000,
        "digits": 3, "count": 9, "clamped": 0}
    back = histogram.from_record(json.loads(json.dumps(record)))
    assert back.get_total_count() == 9
    assert back.get_value_at_percentile(50) == 120          # exact below 2048 µs
    assert within_precision(back.get_max_value(), 48_000)
    assert histogram.percentiles_ms(back)["p50"] == 0.12


def test_values_above_the_range_are_clamped_and_counted():
    hist, clamped = histogram.from_counts([(100, 1), (90_000_000, 2)])
    assert clamped == 2
    assert within_precision(hist.get_max_value(), histogram.HIGHEST_US)
    with pytest.raises(histogram.HistogramError, match="negative"):
        histogram.from_counts([(-1, 1)])


@pytest.mark.parametrize("change, message", [
    ({"encoding": "json"}, "encoding 'json'"),
    ({"unit": "ms"}, "unit 'ms'"),
    ({"data": "not base64 at all"}, "cannot be decoded"),
    ({"count": 10}, "holds 9 values, its record says 10"),
])
def test_a_bad_stored_histogram_is_refused_naming_what_is_wrong(change, message):
    record = histogram.to_record(hist_of({120: 5, 950: 4})) | change
    with pytest.raises(histogram.HistogramError, match=message):
        histogram.from_record(record)


def test_the_resolution_is_one_microsecond_below_2048_and_a_thousandth_above():
    assert histogram.resolution_us(1500) == 1
    assert histogram.resolution_us(1_000_000) / 1_000_000 < 1 / 1000


# --------------------------------------------------------------------------- wrk

def test_wrks_recorded_counts_give_wrks_own_percentiles_to_the_precision():
    """wrk reads percentile p at rank round(p/100 * count + 0.5) of its per-µs counters
    (src/stats.c); the histogram of the same counters agrees to its precision."""
    stdout = (DATA / "wrk_slow_tail_stdout.txt").read_text()
    summary = wrk.parse_wrk_output(stdout)
    raw = json.loads(stdout[len(wrk.JSON_MARKER):])
    assert raw["latency_counts"]["read"] == "ffi"
    hist = histogram.from_record(summary["latency_histogram"])
    counts = list(wrk._decode_counts(raw["latency_counts"]["counts"]))
    assert hist.get_total_count() == sum(c for _, c in counts) > summary["requests"]
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        rank = math.floor(p / 100 * hist.get_total_count() + 0.5 + 0.5)   # C round()
        theirs = raw["latency_us"][key]
        assert within_precision(value_at_rank(hist, rank), theirs), key
    assert within_precision(hist.get_max_value(), raw["latency_us"]["max"])
    assert hist.get_min_value() == raw["latency_us"]["min"]


@pytest.mark.parametrize("counts, why", [
    (None, "wrk printed no latency counts"),
    ({"error": "reading wrk's 9 latency counters took over 5 s"}, "took over 5 s"),
    ({"counts": "12:x"}, "malformed"),
])
def test_wrk_without_usable_counts_keeps_the_sample_and_says_why(counts, why):
    record, reason = wrk.latency_histogram(counts)
    assert record is None and why in reason


# --------------------------------------------------------------------------- oha

def oha_recorded() -> tuple[dict, dict]:
    meta = json.loads((DATA / "oha_slow_tail.meta.json").read_text())
    summary = oha.parse_oha_json((DATA / "oha_slow_tail.json").read_text(),
                                 asked_rate=meta["asked_rate"], duration_s=meta["duration_s"],
                                 connections=meta["connections"])
    return summary, meta


def test_ohas_dump_gives_its_report_percentiles_and_the_late_requests():
    summary, _ = oha_recorded()
    report = json.loads((DATA / "oha_slow_tail.json").read_text().split("Storing")[0])
    oha_dump.add_distribution(summary, oha_dump.read_dump(DATA / "oha_slow_tail.db"))
    assert "latency_histogram_error" not in summary
    hist = histogram.from_record(summary["latency_histogram"])
    assert hist.get_total_count() == summary["requests"]
    # oha reads percentile p as the floor(p/100 * n)-th of its sorted latencies (0-based)
    for name, p in (("p50", 50), ("p90", 90), ("p99", 99)):
        rank = math.floor(p / 100 * hist.get_total_count()) + 1
        theirs = report["latencyPercentiles"][name] * 1e6
        assert within_precision(value_at_rank(hist, rank), theirs), name
    # late, counted here as in the dump itself
    with sqlite3.connect(DATA / "oha_slow_tail.db") as conn:
        (late,) = conn.execute("SELECT count(*) FROM oha WHERE start - "
                               "start_latency_correction > 0.001").fetchone()
    assert summary["rate"]["late"] == late > 0
    assert summary["rate"]["late_tolerance_ms"] == 1.0
    # with requests sent late, latency from the due time exceeds latency from the send
    assert summary["latency_uncorrected_ms"]["p90"] < summary["latency_ms"]["p90"]


def test_an_unreadable_dump_leaves_no_histogram_a_reason_and_every_other_figure(tmp_path):
    summary, _ = oha_recorded()
    before = json.loads(json.dumps(summary))
    (tmp_path / "oha.db").write_bytes(b"not a database")
    oha_dump.add_distribution(summary, oha_dump.collect(None, tmp_path / "oha.db",
                                                        tmp_path / "oha.db"))
    assert summary.pop("latency_histogram") is None
    why = summary.pop("latency_histogram_error")
    assert "cannot be read" in why
    assert summary == before and summary["rate"]["late"] is None
    assert judge.histogram_problem({"latency_histogram_error": why}) == \
        f"latency histogram: {why}"


# --------------------------------------------------------------------------- merging

def test_merged_percentiles_count_every_request_of_every_sample():
    fast = hist_of({1000: 990, 1100: 10})
    slow = hist_of({1000: 950, 30_000: 50})
    merged = latency.merge([fast, fast, slow])
    assert merged.get_total_count() == 3000
    # 50 slow of 3000 = 1.7 %: the p99 is a slow one, though two samples of three are fast
    assert within_precision(merged.get_value_at_percentile(99), 30_000)
    assert merged.get_value_at_percentile(50) == 1000


def test_the_bootstrap_over_samples_is_reproducible_and_holds_the_estimate():
    hists = [hist_of({1000: 990, 1100: 10}), hist_of({1200: 1000}),
             hist_of({1000: 950, 30_000: 50}), hist_of({900: 1000})]
    ci = latency.bootstrap_intervals(hists)
    assert ci == latency.bootstrap_intervals(hists)
    merged = latency.merge(hists)
    for key, p in latency.POINTS:
        value = merged.get_max_value() if p == 100 else merged.get_value_at_percentile(p)
        assert ci[key][0] <= value / 1000 <= ci[key][1], key
    # resamples without the slow sample have a fast p99: the interval spans both
    assert ci["p99"][0] < 1.3 and ci["p99"][1] > 29
    assert latency.bootstrap_intervals(hists[:1]) == {k: None for k, _ in latency.POINTS}


def test_the_bootstrap_reads_percentiles_by_hdrhistograms_own_rule():
    import numpy as np
    hists = [hist_of({1000: 7, 2500: 3, 70_000: 1}), hist_of({1500: 4, 9000: 2})]
    values, counts = latency._bucket_counts(hists)
    total = counts.sum(axis=0)[None, :]
    merged = latency.merge(hists)
    for key, p in latency.POINTS:
        ours = latency._percentiles_of(values, total, np.cumsum(total, axis=1), p)[0]
        assert ours == latency._value_at(merged, p), key


def test_a_case_with_a_sample_without_histogram_keeps_the_median_of_samples():
    record = histogram.to_record(hist_of({1000: 10}))
    samples = [{"summary": {"latency_histogram": record}},
               {"summary": {"latency_histogram": None}}]
    assert latency.case_latency(samples) is None
    assert latency.case_latency(samples[:1])["latency_source"] == latency.MERGED


# --------------------------------------------------------------------------- done when

def slow_tail_run() -> dict:
    return results.load(DATA / "slow_tail_run.json")


def test_on_a_stored_run_the_merged_p99_is_not_the_median_of_the_samples_p99s():
    """Recorded with real wrk: sample 1's server answered 4 % of requests 20 ms late."""
    doc = slow_tail_run()
    samples = doc["cases"][0]["samples"]
    own_p99s = [s["summary"]["latency_ms"]["p99"] for s in samples]
    assert own_p99s[1] > 15 > max(own_p99s[0], own_p99s[2])     # one slow tail
    stats = statistics.summarise_case(samples, 0.10)
    assert stats["latency_source"] == "merged"
    median_of_p99s = statistics.pystats.median(own_p99s)
    merged_p99 = stats["latency_ms"]["p99"]
    # the slow sample's tail is over 1 % of all requests: the case's p99 is in it, while
    # the median of the samples' p99s is a fast sample's
    assert merged_p99 > 15 > median_of_p99s
    assert stats["p99_ms"]["median"] == median_of_p99s            # compare's per-sample
    low, high = stats["latency_ci_ms"]["p99"]
    assert low <= merged_p99 <= high


def test_the_tables_of_a_run_with_histograms_show_and_say_the_merged_figure(tmp_path):
    doc = slow_tail_run()
    built = tables.build_tables(doc)
    row = built[0].rows[0]
    assert row.latency_source == "merged" and row.latency_curve
    text = formats.to_markdown(built, doc)
    assert f"{row.latency_ms['p99']:.2f} ms" in text
    assert "latency histograms merged into one per case" in text
    data = json.loads(formats.to_json(built, doc))
    assert data["tables"][0]["rows"][0]["latency_source"] == "merged"
    assert data["tables"][0]["rows"][0]["latency_ci_ms"]["p99"] == row.latency_ci_ms["p99"]
    from bench.report import charts
    assert charts.latency_chart(built[0], doc, tmp_path / "latency.png").stat().st_size > 0


def test_a_rate_table_with_ohas_dumps_shows_late_and_the_uncorrected_p99():
    """The recorded oha window as the three samples of a fixed-rate case."""
    from bench.core.plan import LoadParams
    from tests.unit.conftest import case_doc, run_doc
    summary, _ = oha_recorded()
    oha_dump.add_distribution(summary, oha_dump.read_dump(DATA / "oha_slow_tail.db"))
    case = case_doc("tail", "none", False, "plain", rps=(1.0, 1.0, 1.0),
                    load=LoadParams(1, generator="oha", rate="200"))
    for sample in case["samples"]:
        sample["summary"] = json.loads(json.dumps(summary))
        sample["generator"]["rate"] = summary["rate"]
    doc = run_doc([case])
    (table,) = tables.build_rate_tables(doc)
    (row,) = table.rows
    assert row.late == 3 * summary["rate"]["late"]
    assert row.latency_uncorrected_ms["p99"] == summary["latency_uncorrected_ms"]["p99"]
    text = "\n".join(formats.rate_markdown(table))
    assert "| late " in text and "latency_p99 from send" in text
    assert f"| {row.late:,d} " in text
    assert "more than 1 ms after their intended send time" in text
    assert json.loads(formats.to_json([], doc, rates=[table]))["rate_tables"][0]["rows"][0][
        "late"] == row.late
