"""The "cost to run" figures from stored samples alone (bench.analysis.footprint) and
their table (bench.report.footprint): numbers in, numbers and text out."""
from __future__ import annotations

import pytest

from bench.analysis import statistics
from bench.analysis.footprint import Spread, case_footprint
from bench.report import footprint


def sample(start: float | None, idle: float | None, mean: float, peak: float,
           status: str = "ok", requests: int = 10_000, cpu_s: float = 2.0) -> dict:
    return {"status": status, "summary": {"requests": requests},
            "overhead_s": {"start_to_ready": (start or 0) + 0.1,
                           **({"start_to_ping": start, "start_to_first_answer": start + 0.01}
                              if start is not None else {})},
            "server_process": {"memory_idle_mb": idle, "memory_idle_kind": "pss"},
            "resources": {"server": {"memory_mean_mb": mean, "memory_peak_mb": peak,
                                     "memory_kind": "pss", "cpu_s": cpu_s}}}


def case(*samples: dict, rps: float = 5000.0, per_cpu: float = 5000.0) -> dict:
    ok = [s for s in samples if s["status"] == "ok"]
    return {"id": "s/none/raw/plain@c32", "server": "s", "database": "none", "orm": False,
            "test": "plain", "samples": list(samples),
            # what bench.analysis.statistics.resource_summary derives from the ok samples
            "stats": {"requests_per_sec": {"median": rps},
                      "resources": {"requests_per_server_cpu_s": per_cpu,
                                    **({"server": statistics.resource_summary(ok)["server"]}
                                       if any(s["resources"] for s in ok) else {})}}}


def test_medians_ranges_and_the_peak_of_the_ok_samples_only():
    fp = case_footprint(case(sample(0.2, 100.0, 130.0, 140.0),
                             sample(0.4, 102.0, 131.0, 150.0),
                             sample(0.3, 101.0, 129.0, 145.0),
                             sample(9.0, 900.0, 900.0, 999.0, status="failed")))
    assert fp.start_to_ping_s == Spread(0.3, 0.2, 0.4, 3)
    assert fp.start_to_ready_s.median == pytest.approx(0.4)
    assert fp.idle_mb == Spread(101.0, 100.0, 102.0, 3)
    assert fp.load_mean_mb == 130.0 and fp.load_peak_mb == 150.0     # the failed one: out
    assert fp.memory_kind == "pss"
    assert fp.requests_per_sec_per_gib == pytest.approx(5000 / (150 / 1024))
    assert fp.requests_per_cpu_s == 5000.0


def test_a_run_stored_before_start_up_and_idle_memory_keeps_what_it_has():
    old = sample(None, None, 50.0, 60.0)
    old["server_process"] = {"workers": 1}
    fp = case_footprint(case(old))
    assert fp.start_to_ping_s is None and fp.idle_mb is None and fp.load_peak_mb == 60.0
    nothing = sample(None, None, 0, 0)
    nothing["server_process"], nothing["resources"] = {}, {}
    assert case_footprint(case(nothing)) is None


def test_the_table_row_says_each_figure_with_its_unit():
    doc_case = case(sample(0.25, 100.0, 130.0, 150.0), sample(0.35, 102.0, 132.0, 140.0))
    for s, anon, sock in zip(doc_case["samples"], (100.0, 110.0), (0.5, 1.5)):
        s["resources"]["server"]["memory_split_mb"] = {"anon": anon, "file": 20.0, "shmem": 0.0}
        s["resources"]["server"]["socket_memory_mb"] = {"mean": sock, "peak": sock * 2,
                                                        "sockets": 33}
        s["generator"] = {"name": "wrk", "threads": 1, "connections": 64}
    built = {"s": {"ok": True, "seconds": 0.3, "error": None, "size_mb": 12.5,
                   "artefacts": {"/cache/s/server": 12.5}}}
    headers, rows = footprint.footprint_table({"cases": [doc_case], "builds": built})
    assert headers == footprint.HEADERS
    assert rows == [["plain", "s", "none", "raw", "5,000", "300 [250-350]", "310 [260-360]",
                     "400 [350-450]", "101.0", "131.0 / 150.0", "105.0 / 20.0 / 0.0", "1.00 / 3.00", "34,133", "5,000", "pss",
                     "12.5", "- / 0.3", "496.0 (64)"]]
    # what load added per connection: (131 - 101 + 1.0 of sockets) MiB over 64 connections
    assert case_footprint(doc_case).per_connection_kib == pytest.approx(31 * 1024 / 64)
    # a server with no build of its own (nginx) has no size and no build time
    assert footprint.footprint_table({"cases": [doc_case]})[1][0][-3:-1] == ["-", "-"]
    # --cold-build: from nothing cached, then the warm build
    built["s"]["cold_seconds"] = 51.62
    assert footprint.footprint_table({"cases": [doc_case], "builds": built})[1][0][-2] == \
        "51.6 / 0.3"
    assert footprint.footprint_markdown({"cases": []}) == []


def test_a_capped_run_adds_the_cgroups_own_account_of_the_memory():
    capped = case(sample(0.25, 100.0, 130.0, 150.0), sample(0.35, 102.0, 132.0, 140.0))
    for s, sock in zip(capped["samples"], (1.0, 3.0)):
        s["server_process"]["memory_cap"] = {
            "limit_mb": 256, "kind": "cgroup v1 memory.limit_in_bytes", "oom_kills": 0,
            "usage_mb": 140.0, "peak_mb": 150.0, "anon_mb": 120.0, "file_mb": 4.0,
            "sock_mb": sock, "kernel_mb": None}
    fp = case_footprint(capped)
    assert fp.cap_split_mb == {"anon": 120.0, "file": 4.0, "sock": 2.0}
    assert fp.cap_kind == "cgroup v1 memory.limit_in_bytes"
    headers, rows = footprint.footprint_table({"cases": [capped]})
    assert headers == footprint.HEADERS + [footprint.CAP_HEADER]
    assert rows[0][-1] == "120.0 / 4.0 / 2.0 / -"
    assert rows[0][-9] == rows[0][-8] == "-"          # no PSS parts, no socket figures
    assert rows[0][-2] == "-"                        # no generator record: no connections
