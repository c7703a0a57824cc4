"""Per-sample verdicts, on numbers alone."""
import pytest

from bench.analysis import judge
from bench.load.wrk import request_accounting
from tests.unit.conftest import summary


def verdict(s, **kw):
    args = dict(connections=64, threads=1, client_cpu_s=1, wall_s=10, threshold=0.001)
    return judge.judge(s, **{**args, **kw})


def test_error_rate_counts_every_kind_per_request_sent():
    s = summary(1000, 1.0, errors=5, requests=1000)
    s["errors"].update(timeout=5, total=10)
    assert judge.error_rate(s) == pytest.approx(0.01)      # no `sent`: schema 1 figures
    s["sent"] = 2000
    assert judge.error_rate(s) == pytest.approx(0.005)


def test_unanswered_requests_beyond_those_in_flight_are_lost_errors():
    errors = {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0}
    # 64 connections may each have one request in flight at the stop: not lost
    assert request_accounting(10_064, 10_000, errors, 64) == \
        {"unanswered": 64, "lost": 0, "errors": 0}
    assert request_accounting(10_100, 10_000, errors, 64) == \
        {"unanswered": 100, "lost": 36, "errors": 36}
    # a read error is such an unanswered request: counted once, not twice
    assert request_accounting(10_100, 10_000, {**errors, "read": 40}, 64)["errors"] == 40
    assert request_accounting(10_100, 10_000, {**errors, "read": 10}, 64)["errors"] == 36
    # status and timeout errors are answers, so they add to the lost ones
    assert request_accounting(10_100, 10_000, {**errors, "status": 5}, 64)["errors"] == 41
    # not reported (old wrk scripts): nothing invented
    assert request_accounting(None, 10_000, errors, 64) == \
        {"unanswered": None, "lost": 0, "errors": 0}


def test_sample_over_threshold_is_invalid_with_reason():
    v = verdict(summary(1000, 64.0, errors=20, requests=10_000))
    assert not v.valid
    assert v.reason.startswith("0.20% of requests failed") and "status 20" in v.reason


def test_errors_under_threshold_are_kept_as_a_warning():
    v = verdict(summary(1000, 64.0, errors=1, requests=10_000))
    assert v.valid and v.reason is None
    assert v.warnings == ["1 errors (0.010%, under the 0.10% threshold): status 1"]


def test_littles_law_consistent_sample_has_no_warning():
    # 64 connections, 1000 req/s, 64 ms mean: C = X * R exactly
    v = verdict(summary(1000, 64.0), client_cpu_s=2)
    assert v.valid and v.warnings == []
    assert v.figures["littles_law_ratio"] == pytest.approx(1.0)
    assert v.figures["client_bound"] is False


def test_saturated_client_is_client_bound():
    v = verdict(summary(100_000, 0.2), client_cpu_s=9.8)   # 20 of 64 connections explained
    assert v.figures["client_bound"] is True
    assert any("wrk used 98%" in w for w in v.warnings)
    assert any("not explained by server latency" in w for w in v.warnings)


def test_littles_law_shortfall_alone_is_described_not_blamed_on_the_client():
    v = verdict(summary(100_000, 0.2), client_cpu_s=1.0, wall_s=10, server_cpu_s=19.0)
    assert v.figures["client_bound"] is False
    assert v.warnings == ["unexplained time: 69% of the 64 connections' time is not "
                          "explained by server latency (throughput x mean latency = 0.31 x connections, Little's law): "
                          "time went to the client, the kernel or connection set-up between "
                          "requests"]


def test_load_generator_taking_a_third_of_the_cpu_is_client_bound():
    s = summary(130_000, 0.45)          # Little's law fine: 130k x 0.45 ms = 58 of 64
    v = verdict(s, client_cpu_s=1.05, wall_s=2, server_cpu_s=1.45)
    assert v.figures["client_bound"] is True
    assert v.figures["client_cpu_share"] == pytest.approx(0.42)
    assert all(w.startswith("client-bound: wrk used 42% of the CPU") for w in v.warnings)
    v = verdict(s, client_cpu_s=0.5, wall_s=2, server_cpu_s=3.4)
    assert v.figures["client_bound"] is False and v.warnings == []


def test_database_cpu_counts_as_server_side_work():
    s = summary(130_000, 0.45)
    alone = verdict(s, client_cpu_s=1.05, wall_s=2, server_cpu_s=1.45)
    with_db = verdict(s, client_cpu_s=1.05, wall_s=2, server_cpu_s=1.45, database_cpu_s=1.5)
    assert alone.figures["client_bound"] and not with_db.figures["client_bound"]
    assert with_db.figures["client_cpu_share"] == pytest.approx(1.05 / 4.0)


def test_stalls_are_recorded_not_warned():
    # wrk's coordinated-omission correction makes mean latency exceed C / throughput
    v = verdict(summary(7_000, 28.0), client_cpu_s=0.2, wall_s=2, server_cpu_s=3.0)
    assert v.warnings == [] and v.figures["latency_corrected_for_stalls"] is True


def test_no_requests_is_invalid():
    v = verdict(summary(0, 0.0, requests=0), connections=8, client_cpu_s=0, wall_s=1)
    assert not v.valid and v.reason == "no request completed"


def test_judge_sample_uses_the_connections_that_really_ran():
    sample = {"summary": summary(1000, 32.0),
              "generator": {"name": "wrk", "connections": 32, "threads": 1, "client_cpu_s": 1, "wall_s": 10},
              "resources": {"server": {"cpu_s": 9.0}}}
    v = judge.judge_sample(sample, 0.001)
    assert v.figures["littles_law_ratio"] == pytest.approx(1.0) and v.warnings == []


def test_more_db_connections_than_the_budget_makes_a_sample_invalid():
    budget = {"total": 32, "processes": 8, "per_process": 4}
    assert judge.budget_problem({"db_budget": budget, "db_connections_seen": 32}) is None
    assert judge.budget_problem({"db_budget": budget, "db_connections_seen": 40}) == (
        "the database saw 40 connections from the server after the run, over its budget of 32")
    assert judge.budget_problem({"db_budget": None, "db_connections_seen": None}) is None
    sample = {"summary": summary(1000, 1.0), "resources": {},
              "generator": {"name": "wrk", "connections": 64, "threads": 1, "client_cpu_s": 1, "wall_s": 10},
              "server_process": {"db_budget": budget, "db_connections_seen": 33}}
    v = judge.judge_sample(sample, 0.001)
    assert not v.valid and "33 connections" in v.reason


def test_a_worker_holding_twice_its_share_of_connections_is_warned_about():
    even = {"client_connections": {"total": 64, "per_worker": [9, 9, 8, 8, 8, 8, 7, 7],
                                   "min": 7, "max": 9}}
    assert judge.spread_warning(even) is None
    skewed = {"client_connections": {"total": 64, "per_worker": [21, 9, 8, 8, 6, 5, 4, 3],
                                     "min": 3, "max": 21}}
    assert judge.spread_warning(skewed) == (
        "client connections spread unevenly over the 8 worker processes: 21 on the busiest, "
        "3 on the idlest, 8 would be even")
    # a threaded server: only the total is known
    assert judge.spread_warning({"client_connections": {"total": 64, "per_worker": None}}) is None
    # a reading that missed connections (5 of 16 seen) judges nothing: the other 11 may
    # all sit on the idle workers
    missed = {"client_connections": {"total": 5, "expected": 16, "per_worker": [3, 2, 0, 0],
                                     "min": 0, "max": 3}}
    assert judge.spread_warning(missed) is None
    seen_all = {"client_connections": {**missed["client_connections"], "total": 16,
                                       "per_worker": [13, 2, 1, 0], "max": 13}}
    assert judge.spread_warning(seen_all).startswith("client connections spread unevenly")


def test_stress_checks_burst_errors_and_memory_growth():
    from bench.analysis import judge as j
    from tests.unit.conftest import summary
    sample = {"burst": {"seconds": 5, "summary": summary(1000, 1.0, errors=50)}}
    assert "5 s burst of new connections after the window: 0.50% of requests failed" in \
        j.burst_problem(sample, 0.001)
    assert j.burst_problem({"burst": {"seconds": 5, "summary": summary(1000, 1.0)}}, 0.001) is None
    grew = {"server": {"memory_first_mb": 100.0, "memory_last_mb": 160.0}}
    assert "from 100 MiB in the first quarter of the window to 160 MiB" in j.memory_growth(grew)
    assert j.memory_growth({"server": {"memory_first_mb": 100.0, "memory_last_mb": 105.0}}) is None
    assert j.memory_growth({"server": {"memory_first_mb": 4.0, "memory_last_mb": 9.0}}) is None


def worker_sample(before, after):
    return {"summary": summary(1000, 64.0), "resources": {},
            "generator": {"name": "wrk", "connections": 64, "threads": 1, "client_cpu_s": 1, "wall_s": 10},
            "server_process": {"worker_pids": {"before": before, "after": after}}}


def test_the_same_worker_pids_before_and_after_is_valid():
    v = judge.judge_sample(worker_sample([1, 2], [2, 1]), 0.001)
    assert v.valid and v.warnings == []
    assert judge.workers_replaced({"worker_pids": {"before": [1, 2], "after": [1, 2]}}) is None
    assert judge.workers_added({"worker_pids": {"before": [1, 2], "after": [1, 2]}}) is None
    # uncounted (threads, none): nothing to say
    assert judge.judge_sample(worker_sample(None, None), 0.001).valid


def test_a_worker_gone_and_one_new_is_a_replaced_crash():
    v = judge.judge_sample(worker_sample([1, 2], [1, 3]), 0.001)
    assert not v.valid and v.reason == (
        "worker processes exited during the sample (crashed; replaced or not): 1 gone, 1 new")


def test_a_worker_gone_and_none_new_is_a_crash():
    v = judge.judge_sample(worker_sample([1, 2, 3], [1]), 0.001)
    assert not v.valid and v.reason == (
        "worker processes exited during the sample (crashed; replaced or not): 2 gone, 0 new")


def test_a_worker_that_appears_while_none_is_gone_is_a_warning_not_a_crash():
    v = judge.judge_sample(worker_sample([1, 2, 3], [1, 2, 3, 4]), 0.001)
    assert v.valid and v.reason is None
    assert v.warnings == ["1 worker process appeared during the sample and none exited: "
                          "fewer workers served the start of the window (still being started, "
                          "or started on demand)"]
    assert judge.workers_replaced(worker_sample([1], [1, 2, 3])["server_process"]) is None
    assert judge.workers_added(worker_sample([1], [1, 2, 3])["server_process"]).startswith(
        "2 worker processes appeared")


def test_a_sample_that_hit_its_duration_cap_before_its_iterations_is_invalid():
    done = dict(summary(1000, 1.0), iterations={"asked": 10_000, "completed": 10_000})
    short = dict(summary(1000, 1.0), iterations={"asked": 10_000, "completed": 8_765})
    assert judge.iterations_problem(done) is None and judge.iterations_problem(summary(1, 1)) is None
    sample = {"summary": short, "resources": {},
              "generator": {"name": "k6", "connections": 8, "threads": 1, "client_cpu_s": 1,
                            "wall_s": 10}}
    v = judge.judge_sample(sample, 0.001)
    assert not v.valid and v.reason.startswith("asked for 10,000 iterations but 8,765 completed")


def test_an_oom_kill_the_server_outlived_is_why_its_sample_is_invalid():
    capped = worker_sample([1, 2], [1, 3])
    capped["server_process"]["memory_cap"] = {
        "limit_mb": 128, "kind": "cgroup v1 memory.limit_in_bytes", "oom_kills": 1}
    v = judge.judge_sample(capped, 0.001)
    assert not v.valid and v.reason == (
        "killed by the kernel's OOM killer: the server's memory cap of 128 MiB (cgroup v1 "
        "memory.limit_in_bytes) was reached (1 OOM kill in its cgroup); the server lived on")
    capped["server_process"]["memory_cap"]["oom_kills"] = 0
    assert judge.judge_sample(capped, 0.001).reason.startswith("worker processes exited")


def test_an_oom_kill_in_the_capped_proxy_is_the_reason_before_the_errors_it_caused():
    behind = worker_sample([1, 2], [1, 2])
    behind["summary"] = summary(1000, 64.0, errors=50, requests=1000)   # what its dead worker caused
    assert judge.judge_sample(behind, 0.001).reason.startswith("5.00% of requests failed")
    behind["proxy_memory_cap"] = {"limit_mb": 8, "kind": "cgroup2 memory.max", "oom_kills": 2}
    v = judge.judge_sample(behind, 0.001)
    assert not v.valid and v.reason == (
        "killed by the kernel's OOM killer: the proxy's memory cap of 8 MiB (cgroup2 "
        "memory.max) was reached (2 OOM kills in its cgroup); the proxy lived on")
