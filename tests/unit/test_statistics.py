"""Per-case statistics and verdicts over samples, on numbers alone."""
import pytest

from bench.analysis import statistics as st


def test_spread_of_samples():
    s = st.spread([100.0, 110.0, 90.0, 105.0, 95.0])
    assert (s.n, s.median, s.min, s.max) == (5, 100.0, 90.0, 110.0)
    assert s.stdev == pytest.approx(7.9057, rel=1e-4)
    assert s.cv == pytest.approx(0.079057, rel=1e-4)
    assert s.ci_low <= s.median <= s.ci_high
    assert 90.0 <= s.ci_low < s.ci_high <= 110.0


def test_confidence_interval_is_repeatable_and_narrows_with_more_samples():
    few = st.spread([100, 104, 96])
    assert (few.ci_low, few.ci_high) == (st.spread([100, 104, 96]).ci_low,
                                         st.spread([100, 104, 96]).ci_high)
    many = st.spread([100, 104, 96, 101, 99, 103, 97, 100, 102, 98] * 3)
    assert many.ci_high - many.ci_low < few.ci_high - few.ci_low


def test_one_sample_has_no_spread_and_identical_samples_no_width():
    one = st.spread([123.0])
    assert (one.median, one.stdev, one.cv, one.ci_low) == (123.0, None, None, None)
    same = st.spread([5.0, 5.0, 5.0])
    assert (same.ci_low, same.ci_high, same.cv) == (5.0, 5.0, 0.0)
    assert st.spread([]).median is None


def test_unstable_above_the_cv_threshold():
    assert st.is_unstable(st.spread([100, 130, 70]), 0.10)
    assert not st.is_unstable(st.spread([100, 101, 99]), 0.10)
    assert not st.is_unstable(st.spread([100]), 0.10)


def test_ties_where_intervals_overlap_the_row_above():
    rows = [st.spread([1000, 1010, 990]), st.spread([995, 1005, 985]),
            st.spread([500, 505, 495]), st.spread([499])]
    assert st.ties(rows) == [False, True, False, None]
    assert st.ties([]) == []


def _sample(status, reason=None):
    return {"status": status, "reason": reason}


@pytest.mark.parametrize("statuses,expected", [
    (["ok", "ok", "ok"], ("ok", None)),
    (["ok", "invalid", "ok"], ("invalid", "1 of 3 samples invalid: r1")),
    (["failed", "invalid", "ok"], ("failed", "1 of 3 samples failed: r0")),
    (["ok", "ok", "interrupted"], ("ok", None)),
    (["interrupted", "interrupted"], ("interrupted", "run interrupted before this case was measured")),
    (["pending", "pending"], ("pending", None)),
    (["verification failed"], ("verification failed", "r0")),
])
def test_case_status_from_samples(statuses, expected):
    samples = [_sample(s, f"r{i}" if s not in ("ok", "pending", "interrupted") else None)
               for i, s in enumerate(statuses)]
    status, reason, notes = st.case_status(samples)
    assert (status, reason) == expected
    if statuses == ["ok", "ok", "interrupted"]:
        assert notes == ["2 of 3 samples measured (the run stopped before the others)"]


def test_summary_uses_only_ok_samples_and_merges_repeated_warnings(sample_doc):
    st.refresh(sample_doc)
    fast = next(c for c in sample_doc["cases"] if c["server"] == "fast" and c["test"] == "plain")
    assert fast["stats"]["requests_per_sec"]["median"] == 100000
    assert fast["stats"]["samples_ok"] == 3
    assert fast["warnings"] == ["3 of 3 samples: client-bound: wrk used 99% of its 1 thread(s)' CPU"]
    wobbly = next(c for c in sample_doc["cases"] if c["server"] == "wobbly")
    assert wobbly["stats"]["unstable"] and wobbly["warnings"][-1].startswith("unstable: req/s varies")
    res = fast["stats"]["resources"]
    assert res["server"]["mean_cores"] == 1.0 and res["server"]["memory_peak_mb"] == 110.0
    assert res["requests_per_server_cpu_s"] == pytest.approx(1000.0)


def test_refresh_rejudges_with_the_documents_own_threshold(sample_doc):
    sample_doc["settings"]["unstable_cv"] = 0.9
    st.refresh(sample_doc)
    wobbly = next(c for c in sample_doc["cases"] if c["server"] == "wobbly")
    assert not wobbly["stats"]["unstable"]


def test_refresh_of_samples_it_summarised_before_gives_the_same_figures_unshared(sample_doc):
    import copy
    first, second = st.refresh(copy.deepcopy(sample_doc)), st.refresh(copy.deepcopy(sample_doc))
    assert first == second
    first["cases"][0]["stats"]["requests_per_sec"]["median"] = -1   # the caller's copy
    assert st.refresh(copy.deepcopy(sample_doc))["cases"][0]["stats"] == second["cases"][0]["stats"]
    sample_doc["cases"][0]["samples"][0]["summary"]["requests_per_sec"] *= 10
    assert st.refresh(sample_doc)["cases"][0]["stats"] != second["cases"][0]["stats"]
