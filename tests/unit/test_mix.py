"""The mixed test's pieces that need no server: the profile file and its errors, the
weighted draw, the judgement of a sample's counts per endpoint, the statements a drawn
burst may send, the settings that can run it, and its table."""
from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import pytest

from bench.core import mix
from bench.core.manifest import load_manifest
from bench.core.plan import plan
from bench.core.settings import SelectionError, Settings, validate
from bench.core.suite import Declaration
from bench.report.mix import mix_rows
from bench.verify.mix_counts import expected_per_request, statement_rules
from tests.unit.test_suite_plan import write


def profile(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "p.toml"
    path.write_text(text)
    return path


def test_the_default_profile_is_a_small_api_services_mix():
    m = mix.load(mix.DEFAULT_PROFILE)
    assert m.name == "small-api" and m.source == "mixes/small-api.toml"
    assert m.script_arg == "get_user:60,update_user:15,queries.5:10,fortunes:10,to_json:5"
    assert m.shares() == {"get_user": .6, "update_user": .15, "queries.5": .1,
                          "fortunes": .1, "to_json": .05}
    assert m.needs_suite and m.identity == f"small-api@{m.sha256[:12]}"
    assert [e.title for e in m.endpoints][2] == "queries n=5"


@pytest.mark.parametrize("text, error", [
    ("", "format must be 1"),
    ("format = 2\n[[endpoints]]\ntest = 'plain'\nweight = 1\n", "format must be 1"),
    ("format = 1\n", "no \\[\\[endpoints\\]\\]"),
    ("format = 1\ncolour = 1\n", "unknown key\\(s\\) colour"),
    ("format = 1\n[[endpoints]]\ntest = 'cached'\nweight = 1\n", "test 'cached' cannot be"),
    ("format = 1\n[[endpoints]]\ntest = 'get_user'\nweight = 1\n", "test 'get_user' cannot be"),
    ("format = 1\n[[endpoints]]\ntest = 'plain'\nweight = 0\n", "weight must be a whole number"),
    ("format = 1\n[[endpoints]]\ntest = 'plain'\nweight = 1.5\n", "weight must be a whole number"),
    ("format = 1\n[[endpoints]]\ntest = 'plain'\nweight = 1\nn = 3\n", "plain takes no n"),
    ("format = 1\n[[endpoints]]\ntest = 'queries'\nweight = 1\nn = 501\n", "n must be"),
    ("format = 1\n[[endpoints]]\ntest = 'queries'\nweight = 1\npath = '/'\n", "unknown key"),
    ("format = 1\n[[endpoints]]\ntest = 'queries'\nweight = 1\n"
     "[[endpoints]]\ntest = 'queries'\nweight = 2\nn = 20\n", "queries.20 listed twice"),
    ("format = 1\nendpoints = [", "not a TOML file"),
])
def test_a_wrong_profile_is_refused_saying_where(tmp_path, text, error):
    with pytest.raises(mix.MixError, match=error):
        mix.load(profile(tmp_path, text))


def test_a_missing_profile_is_refused_by_its_flag(tmp_path):
    with pytest.raises(SelectionError, match="--mix .*nothing.toml: cannot read it"):
        mix.load(tmp_path / "nothing.toml")


def test_a_suite_test_without_n_gets_its_default_level(tmp_path):
    m = mix.load(profile(tmp_path, "format = 1\n[[endpoints]]\ntest = 'updates'\nweight = 1\n"))
    assert m.endpoints[0].key == "updates.20" and m.name == "p"


def test_draws_follow_the_weights_and_a_seed_repeats_them():
    m = mix.load(mix.DEFAULT_PROFILE)
    draws = [m.draw(random.Random(7)) for _ in range(3)]
    assert draws == [m.draw(random.Random(7)) for _ in range(3)]
    rng = random.Random(1)
    counts = {}
    for _ in range(20_000):
        key = m.draw(rng).key
        counts[key] = counts.get(key, 0) + 1
    assert mix.share_problem(m, counts) is None


def test_counts_that_do_not_follow_the_weights_are_named():
    m = mix.load(mix.DEFAULT_PROFILE)
    fair = {"get_user": 6000, "update_user": 1500, "queries.5": 1000, "fortunes": 1000,
            "to_json": 500}
    assert mix.share_problem(m, fair) is None
    skewed = dict(fair, get_user=7000, to_json=0)
    why = mix.share_problem(m, skewed)
    assert "did not follow the mix 'small-api'" in why and "to_json 0 of 10500" in why
    assert "get_user 7000" in why and "update_user" not in why
    assert "does not have: plain" in mix.share_problem(m, dict(fair, plain=3))
    assert mix.share_problem(m, {}) is None          # nothing sent: the error rate says so
    assert "no requests per endpoint" in mix.summary_problem(m, {"requests": 10})
    assert mix.summary_problem(m, {"endpoints": {k: {"sent": v} for k, v in fair.items()}}) is None


def test_a_drawn_burst_may_send_what_its_endpoints_may():
    m = mix.load(mix.DEFAULT_PROFILE)
    by = {e.test: e for e in m.endpoints}
    drawn = [by["get user"]] * 2 + [by["update user"], by["queries"], by["to json"]]
    allowed, tx = expected_per_request(drawn, None)
    # get user 1 SELECT, update user 0-1 and 1 UPDATE, queries n=5 5 SELECTs, to json none
    assert allowed == {"select": (7 / 5, 8 / 5), "update": (1 / 5, 1 / 5)} and tx == 0
    updates = mix.Endpoint("updates", 10, 1)
    batched = Declaration(updates="batched", update_batch=4, transaction=True)
    assert statement_rules(updates, batched) == ({"select": (10, 10), "update": (3, 3)}, 2)


def test_only_wrk_and_k6_run_the_mix_and_mix_needs_the_test():
    validate(Settings(tests=("mixed",)), ["gin"])
    validate(Settings(tests=("mixed",), generators=("k6",), rates=("100",)), ["gin"])
    for settings, error in (
            (Settings(tests=("mixed",), generators=("oha",)), "oha cannot"),
            (Settings(tests=("mixed",), rates=("50%",)), "oha cannot"),
            (Settings(tests=("plain",), mix="x.toml"), "has no mixed"),
            (Settings(tests=("mixed",), protocols=("h2",)), "nor a weighted draw")):
        with pytest.raises(SelectionError, match=error):
            validate(settings, ["gin"])


def test_a_mixed_case_carries_its_profile_in_its_key(tmp_path):
    plain, with_suite = (load_manifest(write(tmp_path, name, extra)) for name, extra in
                         (("a", ""), ("b", '[suite]\ntemplate = "t"\n')))
    settings = Settings(tests=("mixed",), databases=("postgres",), orm="raw")
    with pytest.raises(SelectionError, match="no database suite"):
        plan(replace(settings, servers=("a",)), {"a": plain})
    assert plan(settings, {"a": plain}) == []        # all servers: left out of the mix
    (case,) = plan(settings, {"b": with_suite})
    assert case.key()["mix"] == mix.load(mix.DEFAULT_PROFILE).identity
    assert "mix" not in plan(replace(settings, tests=("get user",)), {"b": with_suite})[0].key()
    only_user = profile(tmp_path, "format = 1\n[[endpoints]]\ntest = 'get user'\nweight = 1\n")
    assert not replace(settings, mix=str(only_user)).with_suite
    assert len(plan(replace(settings, mix=str(only_user)), {"a": plain})) == 1


def test_the_table_shows_each_endpoints_share_and_its_own_percentiles():
    m = mix.load(mix.DEFAULT_PROFILE)

    def sample(status, sent, p99=None):
        endpoints = {k: {"sent": v} for k, v in sent.items()}
        if p99 is not None:
            for figures in endpoints.values():
                figures["latency_ms"] = {"p50": 1.0, "p90": 2.0, "p99": p99}
        return {"status": status, "summary": {"endpoints": endpoints}}
    sent = {"get_user": 60, "update_user": 15, "queries.5": 10, "fortunes": 10, "to_json": 5}
    case = {"test": "mixed", "server": "gin", "database": "postgres", "orm": False,
            "key": {"generator": "k6"},
            "samples": [sample("ok", sent, 3.0), sample("ok", sent, 5.0),
                        sample("invalid", {"get_user": 10_000}, 99.0)]}
    doc = {"settings": {"mix_profile": m.public()}, "cases": [case, {"test": "plain"}]}
    rows = mix_rows(doc)
    assert rows[0] == ["gin", "postgres", "raw", "k6", "get user", "60%", "120 (60.0%)",
                       "1.00", "2.00", "4.00"]
    assert [r[4] for r in rows] == ["get user", "update user", "queries n=5", "fortunes",
                                    "to json"]
    case["samples"] = [sample("ok", sent)]                           # wrk: counts only
    assert mix_rows(doc)[4][-4:] == ["5 (5.0%)", "-", "-", "-"]
    assert mix_rows({"settings": {}, "cases": [case]}) == []

