"""Series over a machine's stored runs, and change points: a planted step is found, a flat
series gives none."""
import random

from bench.analysis import history
from bench.cli import main
from bench.storage import results
from tests.unit.conftest import case_doc, run_doc


def nightly_docs(levels: list[float], seed: int = 3, noise: float = 0.02) -> list[dict]:
    rng = random.Random(seed)
    docs = []
    for night, level in enumerate(levels):
        rps = tuple(level * (1 + rng.gauss(0, noise)) for _ in range(5))
        doc = run_doc([case_doc("a", "postgres", False, "get user", rps=rps),
                           case_doc("a", "none", False, "plain", rps=(50000.0,) * 5)], repeat=5)
        doc["run_id"] = f"202601{night + 1:02d}T000000Z-box"
        doc["started_at"] = f"2026-01-{night + 1:02d}T00:00:00+00:00"
        doc["environment"]["machine_id"] = "box-1"
        docs.append(doc)
    return docs


def test_a_planted_step_is_found_where_it_was_planted():
    docs = nightly_docs([1000.0] * 12 + [900.0] * 12)
    series = {s.test: s for s in history.build(docs)}
    get_user = series["get user"]
    assert len(get_user.points) == 24
    assert [cp.index for cp in get_user.change_points] == [12]
    cp = get_user.change_points[0]
    assert cp.run_id == "20260113T000000Z-box"
    assert -0.12 < cp.change < -0.08 and cp.p_value < history.MAX_PVALUE
    assert series["plain"].change_points == []


def test_a_change_point_names_the_dependency_bump_between_its_two_runs():
    docs = nightly_docs([1000.0] * 12 + [900.0] * 12)
    for night, doc in enumerate(docs):
        doc["servers"] = {"a": {"versions": {"sanic": "25.12.1" if night < 12 else "26.0.0",
                                             "uvloop": "0.23.0"}}}
    [cp] = {s.test: s for s in history.build(docs)}["get user"].change_points
    assert cp.index == 12 and cp.dependency_changes == ["sanic 25.12.1 → 26.0.0"]
    del docs[12]["servers"]                 # a run from before versions were recorded
    [cp] = {s.test: s for s in history.build(docs)}["get user"].change_points
    assert cp.dependency_changes == []


def test_a_flat_noisy_series_has_no_change_point():
    for seed in range(5):
        docs = nightly_docs([1000.0] * 24, seed=seed)
        assert [s.change_points for s in history.build(docs)] == [[], []], seed


def test_failed_nights_are_gaps_and_filters_apply():
    docs = nightly_docs([1000.0] * 6)
    docs[2]["cases"][0]["samples"][0].update(status="failed", reason="died")
    series = history.build(docs, test="get user")
    assert len(series) == 1 and len(series[0].points) == 5
    assert history.build(docs, server="nope") == []


def test_history_command_reads_a_machines_runs(tmp_path, capsys):
    for doc in nightly_docs([1000.0] * 12 + [900.0] * 12):
        results.save(doc, results.run_dir(tmp_path, "box-1", doc["run_id"]))
    charts = tmp_path / "charts"
    assert main(["history", "--machine", "box-1", "--results-dir", str(tmp_path),
                 "--test", "get_user", "--charts", str(charts)]) == 0
    out = capsys.readouterr().out
    assert "24 runs, 1 series of 1 cases" in out and "20260113T000000Z-box" in out
    step = next(line for line in out.splitlines() if "get user" in line)
    assert "| 24 " in step and " at 20260113T000000Z-box" in step and "%" in step.split("|")[7]
    assert "Where the comparability key changed" not in out
    assert [p.name for p in charts.iterdir()] == ["a_postgres_raw_get_user_c64.png"]
    assert main(["history", "--machine", "other", "--results-dir", str(tmp_path)]) == 2
    assert "machines with runs: box-1" in capsys.readouterr().err


def two_preset_docs() -> list[dict]:
    """12 nights of the default preset at 1000 req/s, then 12 of the nightly preset whose
    figures sit 10 % lower (other settings, not a regression)."""
    docs = nightly_docs([1000.0] * 12 + [900.0] * 12)
    for doc in docs[12:]:
        doc["settings"]["preset"] = "nightly"
    return docs


def test_two_presets_make_two_series_with_no_change_point_at_the_switch():
    series = [s for s in history.build(two_preset_docs()) if s.test == "get user"]
    assert [len(s.points) for s in series] == [12, 12]
    assert len({s.key_id for s in series}) == 2
    assert [s.change_points for s in series] == [[], []]
    assert series[0].differences == []
    assert series[1].differences == ["different settings: preset default vs nightly"]
    (change,) = history.key_changes(two_preset_docs())
    assert change.run_id == "20260113T000000Z-box"
    assert change.previous_run_id == "20260112T000000Z-box"
    assert change.differences == ["different settings: preset default vs nightly"]


def test_a_step_within_one_key_is_still_found_after_a_key_change():
    docs = nightly_docs([1000.0] * 6 + [1000.0] * 12 + [900.0] * 12)
    for doc in docs[:6]:
        doc["load"]["version"] = "wrk 4.1.0"
    series = [s for s in history.build(docs) if s.test == "get user"]
    assert [len(s.points) for s in series] == [6, 24]
    assert [cp.run_id for cp in series[1].change_points] == ["20260119T000000Z-box"]
    assert "different load generator version: wrk 4.1.0 vs None" in series[1].differences


def test_history_command_shows_where_the_key_changed(tmp_path, capsys):
    for doc in two_preset_docs():
        results.save(doc, results.run_dir(tmp_path, "box-1", doc["run_id"]))
    charts = tmp_path / "charts"
    assert main(["history", "--machine", "box-1", "--results-dir", str(tmp_path),
                 "--test", "get_user", "--charts", str(charts)]) == 0
    out = capsys.readouterr().out
    assert "24 runs, 2 series of 1 cases" in out
    rows = [line for line in out.splitlines() if line.startswith("| get user")]
    assert len(rows) == 2 and [row.split("|")[7].strip() for row in rows] == ["none", "none"]
    assert ("- at 20260113T000000Z-box (after 20260112T000000Z-box): different settings: "
            "preset default vs nightly") in out
    assert len(list(charts.iterdir())) == 2


def with_start_and_memory(docs: list[dict], starts: list[float], peaks: list[float],
                          seed: int = 5) -> list[dict]:
    """Each night's get-user samples given a start-up (s) and a peak memory (MiB) around
    that night's level, 2 % noise."""
    rng = random.Random(seed)
    for doc, start, peak in zip(docs, starts, peaks):
        for sample in doc["cases"][0]["samples"]:
            sample.setdefault("overhead_s", {})["start_to_ping"] = start * (1 + rng.gauss(0, 0.02))
            sample["resources"]["server"]["memory_peak_mb"] = peak * (1 + rng.gauss(0, 0.02))
    return docs


def test_a_step_in_start_up_or_memory_is_found_where_req_s_held():
    """A dependency bump that doubles the start-up on night 13 and one that adds 30 % of
    memory on night 7, req/s flat: each is a step of its own figure's series only."""
    docs = with_start_and_memory(nightly_docs([1000.0] * 24),
                                 [0.2] * 12 + [0.4] * 12, [40.0] * 6 + [52.0] * 18)
    by_figure = {figure: {s.test: s for s in history.build(docs, figure=figure)}["get user"]
                 for figure in ("req/s", "start-up", "peak memory")}
    assert by_figure["req/s"].change_points == []
    [start] = by_figure["start-up"].change_points
    assert start.index == 12 and 0.9 < start.change < 1.1
    assert by_figure["start-up"].points[0].median < 0.25
    [memory] = by_figure["peak memory"].change_points
    assert memory.index == 6 and 0.25 < memory.change < 0.35
    # the plain case measured neither: no series at all rather than zeros
    assert {s.test for s in history.build(docs, figure="start-up")} == {"get user"}


def test_history_command_follows_the_figure_it_is_asked_for(tmp_path, capsys):
    docs = with_start_and_memory(nightly_docs([1000.0] * 12), [0.2] * 6 + [0.4] * 6,
                                 [40.0] * 12)
    for doc in docs:
        results.save(doc, results.run_dir(tmp_path, "box-1", doc["run_id"]))
    charts = tmp_path / "charts"
    assert main(["history", "--machine", "box-1", "--results-dir", str(tmp_path),
                 "--test", "get_user", "--figure", "startup", "--charts", str(charts)]) == 0
    out = capsys.readouterr().out
    assert "last median start-up (ms)" in out
    row = next(line for line in out.splitlines() if "get user" in line)
    assert 380 < float(row.split("|")[6]) < 420 and " at 20260107T000000Z-box" in row
    assert [p.name for p in charts.iterdir()] == ["a_postgres_raw_get_user_c64.png"]


def test_a_mixed_case_under_another_profile_starts_another_series():
    docs = nightly_docs([1000.0] * 6 + [700.0] * 6)
    for night, doc in enumerate(docs):
        doc["cases"][0]["key"]["mix"] = "small-api@aaaaaaaaaaaa" if night < 6 else "heavy@bbbbbbbbbbbb"
    first, second = [s for s in history.build(docs) if s.test == "get user"]
    assert (len(first.points), len(second.points)) == (6, 6)
    assert first.key_id.endswith(" small-api@aaaaaaaaaaaa") and second.key_id.endswith(" heavy@bbbbbbbbbbbb")
    assert first.change_points == second.change_points == []     # no step across profiles
