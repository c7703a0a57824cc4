"""Cost per request: the arithmetic from a window's figures, the case's medians, the
column and table that show them, and the fallback where no cgroup can be made."""
from __future__ import annotations

from bench.analysis.statistics import PERCENTILES, cost_summary, resource_summary
from bench.infra.cgroups import PROCFS, RoleCgroups
from bench.infra.fake import FakeHost
from bench.infra.resources import add_cost
from bench.report import cost, formats


def _group(cpu_s: float, accounting: str = "cgroup2", memory: float = 50.0) -> dict:
    return {"cpu_s": cpu_s, "memory_mean_mb": memory, "accounting": accounting}


def _sample(server_s: float, requests: int = 10_000) -> dict:
    resources = {"server": _group(server_s), "database": _group(0.5, memory=200.0),
                 "client": _group(0.3, "rusage", None),
                 "machine": {"local": {"busy_cpu_s": server_s + 0.9, "harness_cpu_s": 0.05}}}
    add_cost(resources, requests)
    return {"status": "ok", "resources": resources,
            "summary": {"requests": requests, "requests_per_sec": requests / 5,
                        "errors": {"total": 0},
                        "latency_ms": {p: 1.0 for p in PERCENTILES}}}


def test_cpu_per_request_is_each_roles_cpu_over_the_requests_answered():
    resources = _sample(1.0)["resources"]
    assert resources["server"]["cpu_us_per_request"] == 100.0
    assert resources["database"]["cpu_us_per_request"] == 50.0
    assert resources["client"]["cpu_us_per_request"] == 30.0
    assert resources["machine"]["local"]["cpu_us_per_request"] == 190.0
    resources["machine"]["local"]["not_idle_cpu_s"] = 2.5     # preferred: idle is exact
    add_cost(resources, 10_000)
    assert resources["machine"]["local"]["cpu_us_per_request"] == 250.0
    assert resources["machine"]["local"]["busy_cpu_us_per_request"] == 190.0
    nothing = {"server": _group(1.0)}
    add_cost(nothing, 0)
    assert nothing["server"]["cpu_us_per_request"] is None


def test_a_case_takes_the_median_over_its_samples_and_says_how_it_was_measured():
    summary = cost_summary([_sample(1.0), _sample(2.0), _sample(4.0)])
    assert summary["server"] == {"cpu_us_per_request": 200.0, "memory_mb": 50.0,
                                 "accounting": "cgroup2"}
    assert summary["client"]["accounting"] == "rusage"
    assert summary["machine_cpu_us_per_request"] == 290.0
    assert summary["harness_cpu_us_per_request"] == 5.0
    assert "proxy" not in summary


def test_runs_without_cost_figures_summarise_as_before():
    old = {"status": "ok", "resources": {"server": {"cpu_s": 1.0, "mean_cores": 0.2}},
           "summary": {"requests": 100}}
    assert "cost" not in resource_summary([old])
    assert formats.cost_cell({}) == "-" and formats.cost_values({}) is None


def test_the_cost_column_lists_the_roles_and_the_machine():
    resources = resource_summary([_sample(1.0)])
    assert formats.cost_values(resources) == [100.0, 50.0, None, 30.0, 190.0]
    assert formats.cost_cell(resources) == "100 / 50 / - / 30 (190)"


def test_the_cost_table_sets_the_roles_sum_against_the_machine():
    case = {"test": "get_user", "server": "gin", "database": "postgres",
            "key": {"connections": 64, "rate": "2000", "proxy": "nginx"},
            "samples": [_sample(1.0)]}
    doc = {"settings": {}, "cases": [case]}
    [row] = cost.cost_rows(doc)
    assert row[3] == "64 conn, rate 2000, behind nginx"
    assert row[5:13] == ["100", "50", "-", "30", "180", "190", "5.3 %", "2.6 %"]
    assert "server cgroup2" in row[-1] and "generator rusage" in row[-1]
    assert cost.cost_markdown({"settings": {}, "cases": []}) == []
    assert cost.cost_html({"settings": {}, "cases": []}) == []
    assert "<td>64 conn, rate 2000, behind nginx</td>" in "".join(cost.cost_html(doc))


def test_a_host_that_cannot_make_cgroups_falls_back_to_procfs_and_says_why():
    cgroups = RoleCgroups({"server": FakeHost()}).open()
    cgroups.place("server", [1234])
    cgroups.start()
    cgroups.stop()
    cgroups.close()
    assert cgroups.accounting("server") == PROCFS
    assert "NotImplementedError" in cgroups.why_not["server"]
