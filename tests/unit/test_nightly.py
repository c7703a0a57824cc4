"""nightly.sh's decisions (bench.cli.nightly): when to calibrate first, which runs are
tonight's and the previous night's, and which exit status tonight's run earns."""
from __future__ import annotations

from pathlib import Path

from bench.cli import nightly
from bench.paths import REPO

FIXTURES = str(REPO / "tests/fixtures/servers")
SETTINGS = nightly.settings_of(["--servers", "tunable_cost", "--servers-dir", FIXTURES,
                                "--duration", "1"])


def stored(**overrides) -> dict:
    return {"machine_id": "box", "path": "results/box/calibration.json",
            "created_at": "2024-05-01T02:00:00Z", "runs": ["r1", "r2"],
            "settings": dict(SETTINGS), **overrides}


def case(case_id: str, status: str = "ok", reason: str = "") -> dict:
    return {"id": case_id, "status": status, "reason": reason}


def run(*cases, status="complete") -> dict:
    return {"run_id": "tonight", "status": status, "cases": list(cases)}


def test_the_settings_are_the_nightly_preset_with_the_options_on_top():
    assert SETTINGS["preset"] == "nightly" and SETTINGS["duration"] == 1.0
    assert SETTINGS["repeat"] == 5                     # the preset's


def test_a_calibration_that_fits_is_used_and_one_that_does_not_says_why():
    assert nightly.calibration_misfit(stored(), "box", SETTINGS) is None
    assert nightly.calibration_misfit(None, "box", SETTINGS) == \
        "machine box has no calibration yet"
    assert "made for machine old-box" in \
        nightly.calibration_misfit(stored(machine_id="old-box"), "box", SETTINGS)
    other = nightly.calibration_misfit(stored(settings={**SETTINGS, "duration": 5.0}), "box",
                                       SETTINGS)
    assert other == "it was made with other settings: duration 5.0 (tonight 1.0)"


def test_the_selection_and_the_sample_count_do_not_make_a_calibration_stale():
    selection = {**SETTINGS, "servers": ["other"], "repeat": 9, "order_seed": 3}
    assert nightly.calibration_misfit(stored(settings=selection), "box", SETTINGS) is None


def test_a_comparability_key_in_the_calibration_decides_which_settings_count():
    keyed = stored(settings={}, key={"settings": {"duration": 1.0, "warmup": 9.0}})
    assert nightly.calibration_misfit(keyed, "box", SETTINGS) == \
        f"it was made with other settings: warmup 9.0 (tonight {SETTINGS['warmup']!r})"


def test_tonight_is_the_newest_new_run_and_the_previous_night_skips_calibration_runs():
    folders = [Path("r/box") / name for name in ("a", "b", "c1", "c2", "d", "verify-e")]
    before = {"r/box/a", "r/box/b"}
    assert nightly.tonight_and_previous(folders, before, {"c1", "c2"}) == \
        (Path("r/box/d"), Path("r/box/b"))
    assert nightly.tonight_and_previous(folders, before | {"r/box/d"}, set()) == \
        (Path("r/box/c2"), Path("r/box/d"))
    assert nightly.tonight_and_previous(folders[:2], before, set()) == (None, Path("r/box/b"))


def test_a_complete_run_with_every_case_ok_is_fine():
    assert nightly.health(run(case("a")), run(case("a"))) == (nightly.FINE, [])


def test_a_run_not_complete_is_the_benchmark_failing():
    status, said = nightly.health(run(case("a"), status="failed"), None)
    assert status == nightly.BENCH_FAILED and said == ["run tonight is failed, not complete"]


def test_a_case_ok_the_previous_night_and_not_tonight_is_broken():
    status, said = nightly.health(run(case("a", "failed", "never answered /ping/"), case("b")),
                                  run(case("a"), case("b")))
    assert status == nightly.BROKEN
    assert said == ["a: failed (ok the previous night): never answered /ping/"]


def test_a_case_that_vanished_is_broken():
    status, said = nightly.health(run(case("b")), run(case("a"), case("b")))
    assert (status, said) == (nightly.BROKEN, ["a: missing tonight (ok the previous night)"])


def test_a_case_not_ok_on_both_nights_or_on_the_first_night_is_the_benchmark_failing():
    bad = run(case("a", "invalid", "errors 12%"))
    assert nightly.health(bad, run(case("a", "invalid")))[0] == nightly.BENCH_FAILED
    assert nightly.health(bad, None) == (nightly.BENCH_FAILED, ["a: invalid: errors 12%"])


def test_bad_options_are_bad_input(capsys):
    assert nightly.main(["calibration", "results", "box", "--duration", "-1"]) == \
        nightly.BAD_INPUT
