"""Is the machine quiet enough to measure? The foreign load from two recorded snapshots,
the sample's verdict on it, the machine's state read here, and compare's weak verdict
for runs whose noise differs."""
import os
import subprocess
import sys

import psutil

from bench.analysis import compare
from bench.infra import quiet
from bench.infra.agent import quietness
from tests.unit.test_compare import BASE, by_server, doc_with

HZ, CPUS = 100, 2


def snapshot(at: float, procs: dict, steal: int = 0, harness=(1000,)) -> dict:
    """A cpu_snapshot as the agent returns it: procs pid -> (name, ppid, start, own, kids)."""
    ticks = int(at * HZ)
    return {"at": at, "uptime_ticks": ticks, "hz": HZ, "cpus": CPUS,
            "machine": {"user": ticks, "idle": ticks, "steal": steal},
            "procs": {str(pid): list(entry) for pid, entry in procs.items()},
            "harness": list(harness)}


def test_foreign_cpu_is_a_share_of_the_machine_with_the_top_process_named():
    before = snapshot(10.0, {1000: ("python", 1, 5, 50, 0), 2000: ("hog", 1, 5, 10, 0),
                             3000: ("server", 1000, 6, 0, 0), 4000: ("db", 1, 6, 0, 0)},
                      harness=(1000, 3000))
    # 2 s on 2 CPUs = 400 ticks: the hog took 200 (half the machine), the harness, its
    # server and a role outside its tree (the database) took more and are left out
    after = snapshot(12.0, {1000: ("python", 1, 5, 150, 0), 2000: ("hog", 1, 5, 210, 0),
                            3000: ("server", 1000, 6, 300, 0), 4000: ("db", 1, 6, 100, 0),
                            5000: ("late", 1, 1100, 20, 0)}, steal=40, harness=(1000, 3000))
    noise = quiet.foreign_load(before, after, exclude=[4000])
    assert noise["foreign_cpu_share"] == 0.55            # hog 200 + late starter 20
    assert noise["top"][0] == {"name": "hog", "pid": 2000, "cpu_share": 0.5}
    assert [p["pid"] for p in noise["top"]] == [2000, 5000]
    assert noise["window_s"] == 2.0 and noise["steal_share"] == round(40 / 440, 4)
    said = quiet.noise_verdict(noise, 0.05)
    assert said.startswith("foreign load: 55.0 % of the machine's CPU")
    assert "hog (pid 2000) 50.0 %" in said
    assert quiet.noise_verdict(noise, 0.6) is None


def test_a_reaped_child_counts_once_in_its_parent():
    """make ran a compiler that ended in the window: only the CPU it used in the window
    is charged (to make), not what it had used before."""
    before = snapshot(0.0, {10: ("make", 1, 1, 0, 0), 11: ("cc", 10, 2, 80, 0)})
    after = snapshot(1.0, {10: ("make", 1, 1, 0, 100)})
    noise = quiet.foreign_load(before, after)
    assert noise["top"] == [{"name": "make", "pid": 10, "cpu_share": 0.1}]


def test_steal_above_the_limit_is_said_and_no_figure_is_no_verdict():
    quiet_noise = {"foreign_cpu_share": 0.01, "steal_share": 0.2, "top": []}
    assert "20.0 % of the CPU time stolen" in quiet.noise_verdict(quiet_noise, 0.05)
    assert quiet.noise_verdict({"unavailable": "no agent"}, 0.05) is None
    assert quiet.noise_verdict(None, 0.05) is None


def test_a_real_snapshot_leaves_the_harness_tree_out():
    """A busy child of this process is the harness's (its own tree), never foreign."""
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        proc = psutil.Process(child.pid)
        before = quietness.cpu_snapshot()
        while sum(proc.cpu_times()[:2]) < 0.2:       # until it has used CPU: an event
            pass
        after = quietness.cpu_snapshot()
    finally:
        child.kill()
        child.wait()
    assert child.pid in after["harness"] and os.getpid() in after["harness"]
    noise = quiet.foreign_load(before, after)
    assert child.pid not in [p["pid"] for p in noise["top"]]
    assert 0 <= noise["foreign_cpu_share"] <= 1 and noise["cpus"] == os.cpu_count()


def test_the_machine_state_says_what_it_could_not_read():
    state = quietness.machine_state()
    assert set(state) == {"cpu_governor", "turbo", "smt", "memory", "pressure",
                          "loopback_mtu", "mitigations"}
    for figure in ("cpu_governor", "turbo"):         # a VM has neither: a reason, no guess
        assert "governors" in state[figure] or "enabled" in state[figure] \
            or state[figure]["unavailable"].startswith(("no ", "neither "))
    assert state["memory"]["available_mb"] > 0
    assert state["mitigations"]["cmdline"]


def with_noise(doc: dict, share: float) -> dict:
    for case in doc["cases"]:
        for sample in case["samples"]:
            sample["noise"] = {"foreign_cpu_share": share, "steal_share": 0.0, "top": []}
    return doc


def test_compare_calls_a_change_weak_when_one_run_was_noisier():
    cand = {**BASE, "a": (800, 808, 792, 804, 796)}
    cmp = compare.compare(with_noise(doc_with(BASE, "r1"), 0.01),
                          with_noise(doc_with(cand, "r2"), 0.30))
    row = by_server(cmp)["a"]
    assert row.verdict == "slower" and row.weak and not cmp.regressed
    assert "1.0 % of the CPU used by other processes (median), the candidate's with 30.0 %" \
        in row.reason
    assert "noise_reasons" in cmp.as_dict()
    alike = compare.compare(with_noise(doc_with(BASE, "r1"), 0.01),
                            with_noise(doc_with(cand, "r2"), 0.03))
    assert by_server(alike)["a"].verdict == "slower" and alike.regressed
    assert "noise_reasons" not in alike.as_dict()


def test_a_change_far_beyond_the_noise_gap_stays_decisive():
    """6 points more noise cannot make a server 60 % slower: req/s beyond twice the gap
    keeps its verdict (the p99 alone never would); 40 points could, so there it is weak."""
    cand = {**BASE, "a": (400, 404, 396, 402, 398)}
    cmp = compare.compare(with_noise(doc_with(BASE, "r1"), 0.064),
                          with_noise(doc_with(cand, "r2"), 0.005))
    row = by_server(cmp)["a"]
    assert cmp.noise_reasons and row.verdict == "slower" and not row.weak
    assert [c.server for c in cmp.regressed] == ["a"]
    noisy = compare.compare(with_noise(doc_with(BASE, "r1"), 0.40),
                            with_noise(doc_with(cand, "r2"), 0.005))
    assert by_server(noisy)["a"].weak and not noisy.regressed
