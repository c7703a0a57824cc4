import pytest

from bench import stats
from tests.unit.conftest import summary


def test_error_rate_counts_every_kind():
    s = summary(1000, 1.0, errors=5, requests=1000)
    s["errors"].update(timeout=5, total=10)
    assert stats.error_rate(s) == pytest.approx(0.01)


def test_run_over_threshold_is_invalid_with_reason():
    s = summary(1000, 64.0, errors=20, requests=10_000)
    valid, reason, warnings, figures = stats.judge(s, connections=64, threads=1,
                                                   client_cpu_s=1, wall_s=10, threshold=0.001)
    assert not valid
    assert reason.startswith("0.20% of requests failed") and "status 20" in reason


def test_errors_under_threshold_are_kept_as_a_warning():
    s = summary(1000, 64.0, errors=1, requests=10_000)
    valid, reason, warnings, _ = stats.judge(s, connections=64, threads=1, client_cpu_s=1,
                                             wall_s=10, threshold=0.001)
    assert valid and reason is None
    assert warnings == ["1 errors (0.010%, under the 0.10% threshold): status 1"]


def test_littles_law_consistent_run_has_no_warning():
    # 64 connections, 1000 req/s, 64 ms mean: C = X * R exactly
    s = summary(1000, 64.0)
    valid, _, warnings, figures = stats.judge(s, connections=64, threads=1, client_cpu_s=2,
                                              wall_s=10, threshold=0.001)
    assert valid and warnings == []
    assert figures["littles_law_ratio"] == pytest.approx(1.0)
    assert figures["client_bound"] is False


def test_saturated_client_is_reported_client_bound():
    s = summary(100_000, 0.2)       # 100k req/s x 0.2 ms = 20 of 64 connections busy
    _, _, warnings, figures = stats.judge(s, connections=64, threads=1, client_cpu_s=9.8,
                                          wall_s=10, threshold=0.001)
    assert figures["client_bound"] is True
    assert any("wrk used 98%" in w for w in warnings)
    assert any("Little's law" in w for w in warnings)


def test_load_generator_taking_a_third_of_the_cpu_is_client_bound():
    s = summary(130_000, 0.45)          # Little's law fine: 130k x 0.45 ms = 58 of 64
    _, _, warnings, figures = stats.judge(s, connections=64, threads=1, client_cpu_s=1.05,
                                          wall_s=2, threshold=0.001, server_cpu_s=1.45)
    assert figures["client_bound"] is True and figures["client_cpu_share"] == pytest.approx(0.42)
    assert warnings == [w for w in warnings if w.startswith("client-bound: wrk used 42% of the CPU")]
    _, _, warnings, figures = stats.judge(s, connections=64, threads=1, client_cpu_s=0.5,
                                          wall_s=2, threshold=0.001, server_cpu_s=3.4)
    assert figures["client_bound"] is False and warnings == []


def test_stalls_are_recorded_not_warned():
    # wrk's coordinated-omission correction makes mean latency exceed C / throughput
    s = summary(7_000, 28.0)
    _, _, warnings, figures = stats.judge(s, connections=64, threads=1, client_cpu_s=0.2,
                                          wall_s=2, threshold=0.001, server_cpu_s=3.0)
    assert warnings == [] and figures["latency_corrected_for_stalls"] is True


def test_no_requests_is_invalid():
    s = summary(0, 0.0, requests=0)
    valid, reason, _, _ = stats.judge(s, connections=8, threads=1, client_cpu_s=0, wall_s=1,
                                      threshold=0.001)
    assert not valid and reason == "no request completed"
