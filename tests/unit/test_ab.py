"""The A/B run's pure parts: the paired schedule, the paired analysis on numbers alone,
which servers differ between two versions, and the selection rules."""
from __future__ import annotations

import math
import random
import shutil
from collections import Counter
from pathlib import Path

import pytest

from bench.analysis import paired
from bench.core import manifest
from bench.core.plan import Case, LoadParams, Variant, paired_schedule
from bench.core.settings import SelectionError, Settings
from bench.infra import checkout
from bench.runner import ab

ROOT = Path(__file__).resolve().parents[2]


class _Spec:
    def __init__(self, label):
        self.id, self.label = label.split("@")[0], label


def pair_cases(*servers: str) -> list[Case]:
    return [Case(Variant(_Spec(f"{s}@{arm}"), "none", False), "plain", LoadParams(8))
            for s in servers for arm in "AB"]


def test_the_paired_schedule_puts_each_pair_in_abba_or_baab_blocks():
    cases = pair_cases("x", "y")
    order = paired_schedule(cases, 10, seed=7)
    assert len(order) == 40
    assert Counter(s.case.id for s in order) == {c.id: 10 for c in cases}
    for pair in ((cases[0], cases[1]), (cases[2], cases[3])):
        arms = "".join("A" if s.case is pair[0] else "B" for s in order
                       if s.case in pair)
        blocks = [arms[i:i + 4] for i in range(0, len(arms), 4)]
        assert set(blocks) <= {"ABBA", "BAAB"} and len(blocks) == 5
        # each pair's block is contiguous: nothing else is measured inside it
        positions = [i for i, s in enumerate(order) if s.case in pair]
        for i in range(0, 20, 4):
            assert positions[i + 3] - positions[i] == 3
    assert [s.index for s in order if s.case is cases[0]] == list(range(10))
    assert paired_schedule(cases, 10, seed=7) == order
    assert paired_schedule(cases, 10, seed=8) != order


def test_a_paired_schedule_needs_pairs_and_an_even_repeat():
    with pytest.raises(ValueError):
        paired_schedule(pair_cases("x")[:1], 4, 1)
    with pytest.raises(ValueError):
        paired_schedule(pair_cases("x"), 5, 1)


def ab_doc(a_values, b_values, *, drift=0.0, seed=3, b_status="ok", p99_factor=1.0,
           b_errors=0, b_cost_factor: float | None = None) -> dict:
    """A stored A/B run of one pair: the order of a paired schedule, each sample's req/s
    from the lists, times a drift that grows by `drift` per sample measured."""
    cases = pair_cases("x")
    order = paired_schedule(cases, len(a_values), seed)
    values = {cases[0].id: list(a_values), cases[1].id: list(b_values)}
    stored = {c.id: {"id": c.id, "server": c.variant.server.label, "database": "none",
                     "orm": False, "test": "plain", "status": "ok", "reason": None,
                     "samples": [None] * len(a_values)} for c in cases}
    for n, s in enumerate(order):
        rps = values[s.case.id][s.index] * (1 + drift) ** n
        b = s.case is cases[1]
        p99 = 1000 / rps * (p99_factor if b else 1.0)
        stored[s.case.id]["samples"][s.index] = {
            "index": s.index, "round": s.index, "status": "ok",
            "summary": {"requests_per_sec": rps, "requests": int(rps * 3),
                        "sent": int(rps * 3), "latency_ms": {"p99": p99},
                        "errors": {"total": b_errors if b else 0}}}
        if b_cost_factor is not None:      # the server's CPU-µs per request, A at 40
            stored[s.case.id]["samples"][s.index]["resources"] = {"server": {
                "cpu_us_per_request": 40.0 * (b_cost_factor if b else 1.0) * (1 + 0.01 * (n % 3))}}
    stored[cases[1].id]["status"] = b_status
    return {"run_id": "r", "cases": list(stored.values()),
            "schedule": {"order": [f"{s.case.id}#{s.index}" for s in order]},
            "ab": {"pairs": [[cases[0].id, cases[1].id]]}}


def noisy(level: float, n: int, cv: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [level * math.exp(rng.gauss(0, cv)) for _ in range(n)]


def test_a_planted_five_percent_slowdown_is_slower_and_says_which_figure():
    row = paired.analyse(ab_doc(noisy(1000, 10, 0.01, 1), noisy(950, 10, 0.01, 2)))[0]
    assert row.verdict == "slower" and row.moved == ["req/s"]
    rps = row.figures[0]
    assert -0.07 < rps.change < -0.03 and rps.p_value < paired.ALPHA
    assert rps.ci[0] < rps.change < rps.ci[1] and "req/s -" in row.reason
    assert row.id == "x/none/raw/plain@c8" and row.server == "x"


def test_identical_versions_are_unchanged_even_under_a_strong_drift():
    """The machine speeds up by 1 % per sample (50 % over the run): the blocks cancel it."""
    row = paired.analyse(ab_doc(noisy(1000, 10, 0.01, 4), noisy(1000, 10, 0.01, 5),
                                drift=0.01))[0]
    assert row.verdict == "unchanged", row
    assert abs(row.figures[0].change) < 0.02


def test_a_change_inside_the_sittings_noise_is_not_called():
    """A 3 % difference with 10 % sample noise: the noise floor keeps it unchanged."""
    row = paired.analyse(ab_doc(noisy(1000, 10, 0.10, 6), noisy(970, 10, 0.10, 7)))[0]
    assert row.verdict == "unchanged"
    assert row.figures[0].threshold > 0.02 and row.figures[0].noise_floor > 0.03


def test_p99_and_error_rate_are_judged_too():
    row = paired.analyse(ab_doc(noisy(1000, 10, 0.01, 8), noisy(1000, 10, 0.01, 9),
                                p99_factor=1.5))[0]
    assert row.verdict == "slower" and row.moved == ["p99"]
    row = paired.analyse(ab_doc(noisy(1000, 10, 0.01, 8), noisy(1000, 10, 0.01, 9),
                                b_errors=60))[0]
    assert row.verdict == "slower" and "error rate" in row.moved


def test_the_servers_cpu_per_request_is_judged_when_req_s_does_not_move():
    """req/s the same on both (the client sets the pace), the candidate's server spends
    3 % more CPU per request: slower, on cost alone."""
    row = paired.analyse(ab_doc(noisy(1000, 10, 0.01, 8), noisy(1000, 10, 0.01, 9),
                                b_cost_factor=1.03))[0]
    assert row.verdict == "slower" and row.moved == ["cost"]
    cost = next(f for f in row.figures if f.figure == "cost")
    assert 0.02 < cost.change < 0.04
    same = paired.analyse(ab_doc(noisy(1000, 10, 0.01, 8), noisy(1000, 10, 0.01, 9),
                                 b_cost_factor=1.0))[0]
    assert same.verdict == "unchanged"


def test_a_candidate_case_that_failed_is_broken():
    row = paired.analyse(ab_doc([1000] * 4, [1000] * 4, b_status="failed"))[0]
    assert row.verdict == "broken" and "failed on the candidate" in row.reason


def test_one_round_is_too_few_to_decide():
    row = paired.analyse(ab_doc([1000, 1000], [500, 500]))[0]
    assert row.verdict == "unchanged" and row.figures[0].weak and "weak" in row.reason


# ------------------------------------------------------------------ which servers differ

def two_versions(tmp_path: Path) -> tuple[Path, Path]:
    for side in ("a", "b"):
        shutil.copytree(ROOT / "servers", tmp_path / side / "servers",
                        ignore=shutil.ignore_patterns("node_modules", "target", "__pycache__"))
    return tmp_path / "a" / "servers", tmp_path / "b" / "servers"


def test_a_change_to_a_server_or_the_shared_code_it_uses_marks_it_changed(tmp_path):
    a, b = two_versions(tmp_path)
    assert checkout.changed_servers(manifest.discover([a]), manifest.discover([b])) == {}
    with open(b / "sanic" / "app.py", "a") as f:
        f.write("\n# changed\n")
    assert list(checkout.changed_servers(manifest.discover([a]), manifest.discover([b]))) \
        == ["sanic"]
    with open(b / "_rscommon" / "src" / "lib.rs", "a") as f:
        f.write("\n// changed\n")
    changed = checkout.changed_servers(manifest.discover([a]), manifest.discover([b]))
    # every Rust server builds webbench-common (actix-web, axum, rocket, ...)
    rust = {m.id for m in manifest.discover([b]).values() if m.language == "rust"}
    assert {"actix-web", "axum"} <= rust and set(changed) == {"sanic"} | rust
    with open(b / "django" / "manifest.toml", "a") as f:
        f.write("\n# changed\n")
    changed = checkout.changed_servers(manifest.discover([a]), manifest.discover([b]))
    assert {"django", "django_asgi"} <= set(changed) and "fastapi" not in changed


def test_build_outputs_are_not_code(tmp_path):
    a, b = two_versions(tmp_path)
    (b / "fastify" / "node_modules" / "x").mkdir(parents=True)
    (b / "fastify" / "node_modules" / "x" / "index.js").write_text("1")
    assert checkout.changed_servers(manifest.discover([a]), manifest.discover([b])) == {}


def test_a_ref_is_checked_out_and_a_folder_is_taken_as_it_is(tmp_path):
    head = checkout.resolve("HEAD", "A", cache=tmp_path)
    try:
        assert head.worktree and (head.root / "servers").is_dir() and len(head.commit) == 40
        assert head.cache_dir != checkout.resolve(str(ROOT), "B").cache_dir
    finally:
        checkout.remove(head)
    assert not head.root.exists()
    here = checkout.resolve(str(ROOT), "B", cache=tmp_path)
    assert here.root == ROOT and not here.worktree
    with pytest.raises(checkout.CheckoutError, match="neither a folder nor a git ref"):
        checkout.resolve("no-such-ref-anywhere", "A", cache=tmp_path)
    with pytest.raises(checkout.CheckoutError, match="no servers/ folder"):
        checkout.resolve(str(tmp_path), "A", cache=tmp_path)


def test_the_selection_is_the_changed_servers_unless_named_or_all(tmp_path):
    a, b = two_versions(tmp_path)
    (b / "gin" / "main.go").write_text((b / "gin" / "main.go").read_text() + "\n// x\n")
    shutil.rmtree(b / "aiohttp")
    specs_a, specs_b = manifest.discover([a]), manifest.discover([b])
    chosen = ab.select(Settings(), specs_a, specs_b, False, {})
    assert chosen.servers == ["gin"] and chosen.only_in == {"aiohttp": "the candidate"}
    assert "aiohttp" not in ab.select(Settings(), specs_a, specs_b, True, {}).servers
    assert ab.select(Settings(servers=("sanic",)), specs_a, specs_b, False, {}).servers \
        == ["sanic"]
    with pytest.raises(SelectionError, match="aiohttp not in both versions"):
        ab.select(Settings(servers=("aiohttp",)), specs_a, specs_b, False, {})


def test_impossible_ab_settings_are_refused():
    with pytest.raises(SelectionError, match="must be even"):
        ab.check(Settings(repeat=5), None)
    with pytest.raises(SelectionError, match="--rate"):
        ab.check(Settings(repeat=4, rates=("50%",)), None)


@pytest.mark.parametrize("status, verdicts, code", [
    ("complete", ["unchanged", "faster"], 0),
    (None, [], 0),                                   # nothing changed: nothing measured
    ("complete", ["slower", "unchanged"], 1),
    ("failed", ["unchanged"], 1),                    # an incomplete run is not a pass
    ("complete", ["slower", "broken"], 3),           # broken outranks slower
    ("interrupted", ["broken", "slower"], 130),
])
def test_ab_exits_with_the_gravest_outcome(status, verdicts, code):
    from bench.cli.ab import exit_status
    assert exit_status(status, verdicts) == code
