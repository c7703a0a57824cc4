"""Comparing stored runs, on numbers alone; and the compare command's exit statuses."""
import copy
import json

import pytest

from bench.analysis import compare
from bench.cli import main
from bench.report import comparison
from bench.storage import calibration, results
from tests.unit.conftest import case_doc, run_doc


def doc_with(rps_by_server: dict, run_id: str, repeat: int = 5) -> dict:
    doc = run_doc([case_doc(s, "postgres", False, "get user", rps=r)
                       for s, r in rps_by_server.items()], repeat=repeat)
    doc["run_id"] = run_id
    doc["environment"]["machine_id"] = "m1"
    doc["databases"] = {"postgres": {"engine": "postgres", "host": "h", "port": 1,
                                     "mode": "local", "version": "PostgreSQL 15.18"}}
    return doc


BASE = {"a": (1000, 1010, 990, 1005, 995), "b": (500, 505, 495, 502, 498)}


def by_server(cmp):
    return {c.server: c for c in cmp.cases}


def test_identical_runs_are_unchanged():
    cmp = compare.compare(doc_with(BASE, "r1"), doc_with(BASE, "r2"))
    assert {c.verdict for c in cmp.cases} == {"unchanged"} and not cmp.regressed
    assert by_server(cmp)["a"].rps_ratio == 1.0 and by_server(cmp)["a"].p_value == 1.0


def test_a_clear_slowdown_is_slower_with_its_interval_and_p():
    cand = {**BASE, "a": (800, 808, 792, 804, 796)}
    row = by_server(compare.compare(doc_with(BASE, "r1"), doc_with(cand, "r2")))["a"]
    assert row.verdict == "slower" and not row.weak
    assert row.rps_ratio == pytest.approx(0.8)
    assert row.rps_ratio_ci[0] < 0.8 < row.rps_ratio_ci[1] < 0.95
    assert row.p_value < 0.05


def test_a_change_over_the_threshold_but_within_the_noise_is_unchanged():
    noisy_base = {"a": (1000, 1300, 700, 1200, 800)}
    noisy_cand = {"a": (930, 1250, 650, 1150, 760)}      # median -7 %, samples overlap
    row = compare.compare(doc_with(noisy_base, "r1"), doc_with(noisy_cand, "r2")).cases[0]
    assert row.rps_ratio == pytest.approx(0.93) and row.p_value > 0.05
    assert row.verdict == "unchanged"


def test_a_change_under_the_threshold_is_unchanged_even_if_significant():
    cand = {**BASE, "a": (970, 980, 960, 975, 965)}      # -3 %, clearly separated
    row = by_server(compare.compare(doc_with(BASE, "r1"), doc_with(cand, "r2")))["a"]
    assert row.p_value < 0.05 and row.verdict == "unchanged"


def test_too_few_samples_decide_by_threshold_alone_and_say_weak():
    one = compare.compare(doc_with({"a": (1000,)}, "r1", 1), doc_with({"a": (900,)}, "r2", 1))
    row = one.cases[0]
    assert row.verdict == "slower" and row.weak and row.p_value is None
    assert "cannot reach p < 0.05" in row.reason
    assert compare.smallest_p_value(3, 3) == pytest.approx(0.1)
    assert compare.smallest_p_value(5, 5) == pytest.approx(2 / 252)


@pytest.mark.parametrize("change,reason", [
    (lambda d: d["settings"].update(duration=10.0), "different settings: duration 5.0 vs 10.0"),
    (lambda d: d["environment"].update(machine_id="m2"), "different machine (m1 vs m2"),
    (lambda d: d["load"].update(threads=2), "different load generator threads: 1 vs 2"),
    (lambda d: d["databases"]["postgres"].update(version="PostgreSQL 16.1"),
     "different postgres version"),
    (lambda d: d["databases"]["postgres"].update(mode="docker"),
     "different database mode for postgres: local vs docker"),
])
def test_runs_that_differ_in_what_shapes_the_figures_are_not_comparable(change, reason):
    cand = doc_with(BASE, "r2")
    change(cand)
    cmp = compare.compare(doc_with(BASE, "r1"), cand)
    assert {c.verdict for c in cmp.cases} == {"not comparable"}
    assert all(reason in c.reason for c in cmp.cases)


def test_missing_and_failed_cases_are_not_comparable_with_the_reason():
    cand = doc_with({"a": BASE["a"]}, "r2")
    cand["cases"].append(case_doc("c", "postgres", False, "get user", rps=(), status="failed",
                                 reason="server exited during the run (code 7)"))
    cmp = by_server(compare.compare(doc_with(BASE, "r1"), cand))
    assert cmp["b"].verdict == "not comparable" and cmp["b"].reason == "missing in the candidate"
    assert cmp["c"].reason == "missing in the baseline"
    base = doc_with(BASE, "r1")
    base["cases"][1] = case_doc("b", "postgres", False, "get user", rps=(), status="failed",
                               reason="did not start")
    row = by_server(compare.compare(base, doc_with(BASE, "r2")))["b"]
    assert row.verdict == "not comparable" and row.reason == "failed in the baseline: did not start"


def test_calibrated_thresholds_replace_the_global_one():
    cand = {**BASE, "a": (930, 940, 920, 935, 925)}      # -7 %
    base = doc_with(BASE, "r1")
    strict = by_server(compare.compare(base, doc_with(cand, "r2")))["a"]
    assert strict.verdict == "slower"
    case_id = base["cases"][0]["id"]
    loose = by_server(compare.compare(base, doc_with(cand, "r2"), thresholds={case_id: 0.10}))["a"]
    assert loose.verdict == "unchanged" and loose.threshold_source == "calibrated"


def test_aa_thresholds_follow_the_noise():
    quiet = compare.aa_threshold([1000, 1001, 999, 1000, 1000], [1000, 1002, 998, 1001, 999])
    assert quiet == compare.CALIBRATION_FLOOR
    noisy = compare.aa_threshold([1000, 1200, 800, 1100, 900], [1000, 1150, 850, 1050, 950])
    assert noisy == pytest.approx(1.2533 * 0.1581 * (2 / 5) ** 0.5, rel=1e-3)
    assert compare.aa_threshold([1000], [1100]) == pytest.approx(0.15)


def test_markdown_and_json_reports():
    cand = {**BASE, "a": (800, 808, 792, 804, 796)}
    cmp = compare.compare(doc_with(BASE, "r1"), doc_with(cand, "r2"))
    md = comparison.to_markdown(cmp)
    assert md.startswith("# Comparison: r2 against r1")
    assert "1 slower, 0 faster, 1 unchanged, 0 not comparable" in md
    slower_line = next(line for line in md.splitlines() if "**SLOWER**" in line)
    assert "| get user | a postgres raw" in slower_line and "0.800 [" in slower_line
    data = json.loads(comparison.to_json(cmp))
    assert data["counts"]["slower"] == 1 and data["cases"][0]["verdict"] == "slower"


def _save(tmp_path, doc):
    results.save(doc, tmp_path / doc["run_id"])
    return str(tmp_path / doc["run_id"])


def test_compare_command_exit_statuses(tmp_path, capsys):
    base = _save(tmp_path, doc_with(BASE, "r1"))
    same = _save(tmp_path, doc_with(BASE, "r2"))
    slower = _save(tmp_path, doc_with({**BASE, "a": (800, 808, 792, 804, 796)}, "r3"))
    rd = ["--results-dir", str(tmp_path)]
    assert main(["compare", base, same, *rd]) == 0
    assert main(["compare", base, slower, *rd]) == 1
    assert main(["compare", base, slower, "--threshold", "25", *rd]) == 0
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["compare", base, str(tmp_path / "bad.json"), *rd]) == 2
    future = copy.deepcopy(doc_with(BASE, "r4"))
    future["schema_version"] = 9
    (tmp_path / "r4").mkdir()
    (tmp_path / "r4" / "results.json").write_text(json.dumps(future))
    assert main(["compare", base, str(tmp_path / "r4"), *rd]) == 2
    assert "schema version 9" in capsys.readouterr().err
    out = tmp_path / "cmp.json"
    assert main(["compare", base, slower, "--format", "json", "--output", str(out), *rd]) == 1
    assert json.loads(out.read_text())["counts"]["slower"] == 1


def test_compare_uses_a_stored_calibration_of_the_machine(tmp_path, capsys):
    base = doc_with(BASE, "r1")
    cand = doc_with({**BASE, "a": (930, 940, 920, 935, 925)}, "r2")
    paths = [_save(tmp_path, base), _save(tmp_path, cand)]
    rd = ["--results-dir", str(tmp_path)]
    assert main(["compare", *paths, *rd]) == 1
    calibration.save(tmp_path, "m1", {base["cases"][0]["id"]: 0.10}, ["x", "y"], {})
    capsys.readouterr()
    assert main(["compare", *paths, *rd]) == 0
    assert "Per-case thresholds from the calibration" in capsys.readouterr().out
    assert main(["compare", *paths, "--no-calibration", *rd]) == 1


def test_a_change_of_topology_makes_two_runs_incomparable():
    from bench.analysis import compare as cmp_module
    base = {"environment": {"machine_id": "m"}, "settings": {}, "load": {}}
    moved = {**base, "topology": {"roles": {"client": "root@10.0.0.2", "server": "local",
                                            "database": "local"}}}
    assert cmp_module.run_level_reasons(base, base) == []
    assert cmp_module.run_level_reasons(base, {**base, "topology": {"roles": cmp_module.ALL_LOCAL}}) == []
    (reason,) = cmp_module.run_level_reasons(base, moved)
    assert reason.startswith("different topology") and "root@10.0.0.2" in reason
