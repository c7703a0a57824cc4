"""Comparing stored runs, on numbers alone; and the compare command's exit statuses."""
import copy
import json

import pytest

from bench.analysis import comparability, compare, noise
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


def test_new_cases_and_cases_bad_in_the_baseline_are_not_comparable_with_the_reason():
    cand = doc_with(BASE, "r2")
    cand["cases"].append(case_doc("c", "postgres", False, "get user", rps=(), status="failed",
                                 reason="server exited during the run (code 7)"))
    assert by_server(compare.compare(doc_with(BASE, "r1"), cand))["c"].reason == \
        "new in the candidate"
    base = doc_with(BASE, "r1")
    base["cases"][1] = case_doc("b", "postgres", False, "get user", rps=(), status="failed",
                               reason="did not start")
    row = by_server(compare.compare(base, doc_with(BASE, "r2")))["b"]
    assert row.verdict == "not comparable" and row.reason == "failed in the baseline: did not start"
    gone = by_server(compare.compare(base, doc_with({"a": BASE["a"]}, "r2")))["b"]
    assert gone.verdict == "not comparable"
    assert gone.reason == "missing in the candidate (failed in the baseline: did not start)"


BROKEN_CAUSES = [(status, lambda s=status: case_doc("b", "postgres", False, "get user", rps=(),
                                                     status=s, reason="it went wrong"))
                 for status in ("failed", "verification failed", "pending", "interrupted")]
BROKEN_CAUSES += [("invalid", lambda: case_doc("b", "postgres", False, "get user",
                                                rps=(500, 505, 495, 502, 498), status="invalid",
                                                reason="3.00% of requests failed"))]


@pytest.mark.parametrize("status,make", BROKEN_CAUSES, ids=[c[0] for c in BROKEN_CAUSES])
def test_a_case_ok_in_the_baseline_and_not_in_the_candidate_is_broken(status, make):
    cand = doc_with(BASE, "r2")
    cand["cases"][1] = make()
    cmp = compare.compare(doc_with(BASE, "r1"), cand)
    row = by_server(cmp)["b"]
    assert row.verdict == "broken" and row.reason.startswith(f"{status} in the candidate")
    assert cmp.broken == [row] and cmp.regressed == []


def test_a_case_missing_in_the_candidate_is_broken_even_when_the_runs_differ():
    cand = doc_with({"a": BASE["a"]}, "r2")
    cand["settings"]["duration"] = 10.0
    cmp = compare.compare(doc_with(BASE, "r1"), cand)
    assert by_server(cmp)["b"].verdict == "broken"
    assert by_server(cmp)["b"].reason == "missing in the candidate"
    assert by_server(cmp)["a"].verdict == "not comparable"


def stored_calibration(base: dict, per_case: dict, path="cal.json") -> dict:
    """A format-2 calibration of `base`'s key with these per-case thresholds."""
    return {"format": 2, "key": comparability.key(base), "thresholds": per_case, "path": path}


def test_calibrated_thresholds_replace_the_default_ones_and_are_named():
    cand = {**BASE, "a": (930, 940, 920, 935, 925)}      # -7 %
    base = doc_with(BASE, "r1")
    strict = by_server(compare.compare(base, doc_with(cand, "r2")))["a"]
    assert strict.verdict == "slower" and strict.figure("req/s").threshold_source == "default"
    case_id = base["cases"][0]["id"]
    cal = stored_calibration(base, {case_id: {"req/s": 0.10, "p99": 0.5, "error rate": 0.001}})
    cmp = compare.compare(base, doc_with(cand, "r2"), calibration=cal)
    loose = by_server(cmp)["a"]
    assert loose.verdict == "unchanged" and cmp.calibration == "cal.json"
    assert {(f.figure, f.threshold, f.threshold_source) for f in loose.figures} == {
        ("req/s", 0.10, "cal.json"), ("p99", 0.5, "cal.json"), ("error rate", 0.001, "cal.json"),
        ("peak memory", 0.10, "default")}
    assert by_server(cmp)["b"].figure("p99").threshold_source == "default"
    md = comparison.to_markdown(cmp)
    assert "per case from the calibration cal.json" in md and "10.0% / 50.0% / 0.10 pp / 5.0% / 50.0% / 10.0% (cal.)" in md


def test_a_calibration_of_runs_not_comparable_with_the_baseline_is_ignored_and_says_why():
    base = doc_with(BASE, "r1")
    other = copy.deepcopy(base)
    other["settings"]["preset"] = "nightly"
    cal = stored_calibration(other, {base["cases"][0]["id"]: {"req/s": 0.10}})
    cand = doc_with({**BASE, "a": (930, 940, 920, 935, 925)}, "r2")
    cmp = compare.compare(base, cand, calibration=cal)
    assert by_server(cmp)["a"].verdict == "slower" and cmp.calibration is None
    assert "ignored the calibration cal.json" in cmp.calibration_note
    assert "different settings: preset nightly vs default" in cmp.calibration_note
    assert cmp.calibration_note in comparison.to_markdown(cmp)


def test_a_format_1_calibration_still_gives_req_s_thresholds():
    base = doc_with(BASE, "r1")
    cal = {"machine_id": "m1", "thresholds": {base["cases"][0]["id"]: 0.10}, "path": "old.json"}
    cmp = compare.compare(base, doc_with({**BASE, "a": (930, 940, 920, 935, 925)}, "r2"),
                          calibration=cal)
    row = by_server(cmp)["a"]
    assert row.verdict == "unchanged" and row.figure("req/s").threshold == 0.10
    assert row.figure("p99").threshold_source == "default" and "format 1" in cmp.calibration_note


def test_aa_thresholds_follow_the_noise():
    quiet = compare.aa_threshold([1000, 1001, 999, 1000, 1000], [1000, 1002, 998, 1001, 999])
    assert quiet == noise.CALIBRATION_FLOOR
    noisy = compare.aa_threshold([1000, 1200, 800, 1100, 900], [1000, 1150, 850, 1050, 950])
    assert noisy == pytest.approx(1.2533 * 0.1581 * (2 / 5) ** 0.5, rel=1e-3)
    assert compare.aa_threshold([1000], [1100]) == pytest.approx(0.15)
    # the error rate: absolute, of the means; 1.5 x the A/A difference
    assert noise.aa_threshold([0, 0, 0], [0.001, 0.001, 0.001], 0.0001, relative=False) == \
        pytest.approx(0.0015)


def test_markdown_and_json_reports():
    cand = {**BASE, "a": (800, 808, 792, 804, 796)}
    cmp = compare.compare(doc_with(BASE, "r1"), doc_with(cand, "r2"))
    md = comparison.to_markdown(cmp)
    assert md.startswith("# Comparison: r2 against r1")
    assert "0 broken, 1 slower, 0 faster, 1 unchanged, 0 not comparable" in md
    assert ("Thresholds: req/s 5.0%, p99 20.0%, error rate 0.02 pp, cost 5.0%, start-up 50.0%, "
            "peak memory 10.0% by default.") in md
    slower_line = next(line for line in md.splitlines() if "**SLOWER**" in line)
    assert "| get user | a postgres raw" in slower_line and "0.800 [" in slower_line
    assert "req/s -20.0 % (p 0.0" in slower_line and "p99 +25.0 % (p 0.0" in slower_line
    data = json.loads(comparison.to_json(cmp))
    assert data["counts"]["slower"] == 1 and data["cases"][0]["verdict"] == "slower"
    assert data["cases"][0]["moved"] == ["req/s", "p99"]
    assert data["cases"][0]["figures"][1]["threshold_source"] == "default"


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
    # -20 % req/s is also +25 % p99: both thresholds must be wider for it to pass
    assert main(["compare", base, slower, "--threshold", "25", *rd]) == 1
    assert main(["compare", base, slower, "--threshold", "25", "--p99-threshold", "30", *rd]) == 0
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
    twin = doc_with({**BASE, "a": (1060, 1070, 1050, 1065, 1055)}, "r0")   # 6 % by noise
    found = compare.calibrate(twin, base)
    assert found["runs"] == ["r0", "r1"] and found["key"] == comparability.key(base)
    case_id = base["cases"][0]["id"]
    assert found["figures"][case_id]["req/s"]["first"] == [1060, 1070, 1050, 1065, 1055]
    assert found["thresholds"][case_id]["req/s"] > 0.07
    path = calibration.save(tmp_path, "m1", found)
    stored = json.loads(path.read_text())
    assert stored["format"] == 2 and stored["machine_id"] == "m1" and stored["key_id"]
    capsys.readouterr()
    assert main(["compare", *paths, *rd]) == 0
    out = capsys.readouterr().out
    assert f"per case from the calibration {path}" in out
    assert main(["compare", *paths, "--no-calibration", *rd]) == 1
    path.write_text("{broken")
    assert main(["compare", *paths, *rd]) == 2
    assert f"cannot read the calibration {path}" in capsys.readouterr().err


def test_weak_verdicts_never_fail_and_say_how_many_samples_would_decide(tmp_path, capsys):
    base = _save(tmp_path, doc_with({"a": (1000, 1010, 990)}, "r1", 3))
    slower = _save(tmp_path, doc_with({"a": (500, 505, 495)}, "r2", 3))
    assert main(["compare", base, slower, "--results-dir", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    line = next(x for x in captured.out.splitlines() if "| get user" in x)
    assert "**SLOWER** (weak)" in line and "req/s -50.0 % (weak)" in line
    assert "3 vs 3 cannot reach p < 0.05" in captured.err
    assert "4 samples a side (--repeat) would make them decisive" in captured.err


def test_two_identical_default_preset_runs_exit_0(tmp_path):
    runs = [_save(tmp_path, doc_with({"a": (1000, 1010, 990), "b": (500, 505, 495)}, r, 3))
            for r in ("r1", "r2")]
    assert main(["compare", *runs, "--results-dir", str(tmp_path)]) == 0


def test_a_broken_case_exits_3_even_when_another_case_regressed(tmp_path):
    cand = doc_with({"a": (800, 808, 792, 804, 796)}, "r2")
    cand["cases"].append(case_doc("b", "postgres", False, "get user", rps=(), status="failed",
                                  reason="server did not start"))
    base = _save(tmp_path, doc_with(BASE, "r1"))
    assert main(["compare", base, _save(tmp_path, cand), "--results-dir", str(tmp_path)]) == 3
    gone = _save(tmp_path, doc_with({"a": BASE["a"]}, "r3"))
    assert main(["compare", base, gone, "--results-dir", str(tmp_path)]) == 3


def test_runs_not_comparable_as_a_whole_exit_0_with_a_warning(tmp_path, capsys):
    moved = doc_with({**BASE, "a": (800, 808, 792, 804, 796)}, "r2")
    moved["environment"]["machine_id"] = "m2"
    runs = [_save(tmp_path, doc_with(BASE, "r1")), _save(tmp_path, moved)]
    assert main(["compare", *runs, "--results-dir", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "warning: the runs are not comparable as a whole" in err and "m1 vs m2" in err


def with_samples(doc: dict, server: str, **change) -> dict:
    """`doc` with each sample of `server`'s case changed by change[field](summary, i)."""
    case = next(c for c in doc["cases"] if c["server"] == server)
    for i, sample in enumerate(case["samples"]):
        for name, how in change.items():
            how(sample["summary"], i)
    return doc


def test_a_p99_that_doubles_is_slower_and_says_so():
    cand = with_samples(doc_with(BASE, "r2"), "a",
                        p99=lambda s, i: s["latency_ms"].update(p99=s["latency_ms"]["p99"] * 2))
    cmp = compare.compare(doc_with(BASE, "r1"), cand)
    row = by_server(cmp)["a"]
    assert row.verdict == "slower" and row.moved == ["p99"] and not row.weak
    assert row.reason == "p99 +100.0 %" and row.p99_ratio == pytest.approx(2.0)
    assert row.figure("req/s").direction is None and cmp.regressed == [row]


def test_a_rise_of_the_error_rate_is_slower():
    cand = with_samples(doc_with(BASE, "r2"), "a",
                        e=lambda s, i: s["errors"].update(status=5 + i, total=5 + i))
    row = by_server(compare.compare(doc_with(BASE, "r1"), cand))["a"]    # 0 -> ~0.07 %
    assert row.verdict == "slower" and row.moved == ["error rate"]
    assert row.reason.startswith("error rate +0.07 pp")
    small = with_samples(doc_with(BASE, "r2"), "a",
                         e=lambda s, i: s["errors"].update(status=1, total=1))   # +0.01 pp
    assert by_server(compare.compare(doc_with(BASE, "r1"), small))["a"].verdict == "unchanged"


def test_faster_only_when_nothing_is_worse():
    faster = with_samples(doc_with({**BASE, "a": (1200, 1212, 1188, 1206, 1194)}, "r2"), "a",
                          p=lambda s, i: s["latency_ms"].update(p99=s["latency_ms"]["p99"] * 1.5))
    row = by_server(compare.compare(doc_with(BASE, "r1"), faster))["a"]
    assert row.verdict == "slower" and row.moved == ["p99", "req/s"]
    assert row.reason == "p99 +25.0 %, req/s +20.0 %"


def test_decide_is_one_rule_for_every_figure():
    assert compare.decide(-0.10, 0.05, 0.01, False, "lower") == "worse"
    assert compare.decide(-0.10, 0.05, 0.20, False, "lower") is None
    assert compare.decide(-0.10, 0.05, None, True, "lower") == "worse"
    assert compare.decide(0.10, 0.05, 0.01, False, "higher") == "worse"
    assert compare.decide(-0.10, 0.05, 0.01, False, "higher") == "better"
    assert compare.decide(0.04, 0.05, 0.001, False, "higher") is None
    assert compare.samples_needed(0.05) == 4 and compare.samples_needed(0.01) == 5


def test_a_format_1_calibration_file_is_read_from_disk(tmp_path, capsys):
    base = doc_with(BASE, "r1")
    paths = [_save(tmp_path, base),
             _save(tmp_path, doc_with({**BASE, "a": (930, 940, 920, 935, 925)}, "r2"))]
    old = calibration.path_for(tmp_path, "m1")
    old.parent.mkdir()
    old.write_text(json.dumps({"machine_id": "m1", "created_at": "2026-01-01", "runs": ["x", "y"],
                               "settings": {}, "thresholds": {base["cases"][0]["id"]: 0.10}}))
    assert main(["compare", *paths, "--results-dir", str(tmp_path)]) == 0
    assert "is of format 1: req/s thresholds only" in capsys.readouterr().err


def test_calibrate_prints_each_figures_threshold():
    from bench.cli.calibrate import describe
    found = compare.calibrate(doc_with(BASE, "r0"), doc_with({**BASE, "a": (1100, 1110, 1090,
                                                                             1105, 1095)}, "r1"))
    text = describe(found, "m1", "results/m1/calibration.json")
    assert f"2 cases, comparability key {found['key_id']}) in results/m1/calibration.json" in text
    first = text.splitlines()[3]     # the noisiest req/s first: a moved by 10 %, p99 by -9 %
    # no cost or start-up recorded: "-"; the peak memory at its floor; no counts: "-"
    assert first.split() == ["15.0", "%", "13.6", "%", "0.010", "pp", "-", "-", "3.0", "%",
                             "-", "-", found_case(found, "a")]


def found_case(found: dict, server: str) -> str:
    return next(case for case in found["thresholds"] if case.startswith(f"{server}/"))


def test_a_server_that_costs_more_cpu_per_request_is_slower_even_at_the_same_req_s():
    """The cost figure (the server's CPU-µs per request): req/s held by the client, the
    server's CPU per request up 8 % in every sample."""
    base, cand = doc_with(BASE, "r1"), doc_with(BASE, "r2")
    for doc, cost in ((base, (36.9, 37.1, 36.8, 37.0, 36.9)), (cand, (39.7, 39.9, 39.6, 39.8, 40.0))):
        for sample, value in zip(doc["cases"][0]["samples"], cost):
            sample["resources"]["server"]["cpu_us_per_request"] = value
    cmp = compare.compare(base, cand)
    a = by_server(cmp)["a"]
    assert a.verdict == "slower" and a.figure("req/s").direction is None
    assert a.figure("cost").direction == "worse" and a.figure("cost").change > 0.07
    assert "| **SLOWER** | cost +7.9 % (p 0.012) |" in comparison.to_markdown(cmp)
    # runs from before costs were recorded: no cost figure, nothing judged on it
    assert by_server(cmp)["b"].figure("cost") is None


@pytest.mark.parametrize("figure, where, before, after", [
    ("start-up", ("overhead_s", "start_to_ping"), (0.20, 0.21, 0.19, 0.20, 0.22),
     (0.31, 0.32, 0.33, 0.31, 0.32)),
    ("peak memory", ("resources", "server", "memory_peak_mb"), (36.4, 36.9, 36.5, 36.7, 36.6),
     (48.1, 48.3, 47.9, 48.0, 48.2))])
def test_a_server_that_starts_slower_or_holds_more_memory_is_worse_at_the_same_req_s(
        figure, where, before, after):
    """What a server costs to run, judged like p99: +55 % start-up (past its 50 %
    threshold) or +31 % peak memory (past 10 %) in every sample, req/s unchanged."""
    base, cand = doc_with(BASE, "r1"), doc_with(BASE, "r2")
    for doc, values in ((base, before), (cand, after)):
        for sample, value in zip(doc["cases"][0]["samples"], values):
            holder = sample
            for key in where[:-1]:
                holder = holder.setdefault(key, {})
            holder[where[-1]] = value
    a = by_server(compare.compare(base, cand))["a"]
    assert a.verdict == "slower" and a.figure("req/s").direction is None
    assert a.figure(figure).direction == "worse" and a.figure(figure).p_value < 0.05
    assert a.reason.startswith(figure + " +")
    # a looser threshold, as the flags give it, lets the same change pass
    loose = compare.compare(base, cand, start_threshold=0.7, memory_threshold=0.4)
    assert by_server(loose)["a"].verdict == "unchanged"


def test_a_mixed_case_under_another_profile_is_not_comparable():
    base, cand = doc_with(BASE, "r1"), doc_with({**BASE, "a": (800, 808, 792, 804, 796)}, "r2")
    for doc, identity in ((base, "small-api@aaaaaaaaaaaa"), (cand, "small-api@bbbbbbbbbbbb")):
        for case in doc["cases"]:
            case["key"]["mix"] = identity
    row = by_server(compare.compare(base, cand))["a"]
    assert row.verdict == "not comparable" and "another mix: small-api@aaaaaaaaaaaa in the " \
        "baseline, small-api@bbbbbbbbbbbb in the candidate" == row.reason
    for case in cand["cases"]:
        case["key"]["mix"] = "small-api@aaaaaaaaaaaa"
    assert by_server(compare.compare(base, cand))["a"].verdict == "slower"
