"""The load-generator seam: the registry picks a tool by model, each tool maps the
neutral request onto its own settings, and a tool asked for the wrong model refuses."""
from types import SimpleNamespace

import pytest

from bench import load
from bench.core import manifest
from bench.core.plan import Case, LoadParams, Variant, load_points
from bench.core.settings import GENERATOR_MODELS, SelectionError, Settings, validate
from bench.load import oha, wrk
from bench.load.generator import LoadError, LoadRequest, LoadResult
from bench.report.tables import describe_load
from bench.session import FOR_RUN, preflight

CLOSED = LoadRequest(test="plain", base_url="http://127.0.0.1:1", connections=8, threads=2,
                     duration_s=3, timeout_s=2, seed=5, token="tok", connection_close=True)
OPEN = LoadRequest(test="plain", base_url="http://127.0.0.1:1", connections=8, threads=2,
                   duration_s=3, timeout_s=2, seed=5, token="tok", rate=250.0)


def test_the_registry_picks_the_closed_loop_or_the_open_model_generator():
    assert load.for_request(CLOSED) is wrk.WRK
    assert load.for_request(OPEN) is oha.OHA


def test_an_unknown_generator_names_the_known_ones():
    with pytest.raises(LoadError, match="known: h2load, k6, oha, wrk"):
        load.for_request(CLOSED, closed_loop="siege")


def test_a_generator_asked_for_the_model_it_does_not_run_is_refused():
    with pytest.raises(LoadError, match="does not run the open model"):
        load.for_request(OPEN, open_model="wrk")
    with pytest.raises(LoadError, match="closed loop only"):
        wrk.WRK.run(OPEN)


def test_each_tool_gets_exactly_what_the_request_asks():
    w = wrk.WRK.settings(CLOSED)
    assert (w.threads, w.connections, w.duration_s, w.timeout_s, w.seed, w.token,
            w.connection_close) == (2, 8, 3, 2, 5, "tok", True)
    o = oha.OHA.settings(OPEN)
    assert (o.rate, o.connections, o.worker_threads, o.seed, o.connection_close) == \
        (250.0, 8, 2, 5, False)


# ----------------------------------------------------------------- oha's closed loop

def test_oha_runs_both_models_behind_the_seam():
    assert load.models()["oha"] == GENERATOR_MODELS["oha"] == (False, True)
    assert load.for_request(CLOSED, closed_loop="oha") is oha.OHA
    assert load.for_request(OPEN) is oha.OHA
    closed = oha.OHA.settings(CLOSED)
    # the closed loop: no rate (never a zero), wrk's threads, the request's connections
    assert (closed.rate, closed.open_model, closed.connections, closed.worker_threads,
            closed.duration_s, closed.timeout_s, closed.seed, closed.token,
            closed.connection_close) == (None, False, 8, 2, 3, 2, 5, "tok", True)
    argv = oha.oha_command(CLOSED.test, CLOSED.base_url, closed)
    assert "-q" not in argv and "--latency-correction" not in argv
    assert "--disable-keepalive" in argv
    assert oha.OHA.open_connections(8, 2) == 8


def test_oha_describes_a_rate_only_for_the_open_model():
    rate = {"asked": 250.0, "achieved": 250.0, "not_sent": 0, "late": 0}
    open_result = LoadResult([], {"rate": rate}, 0.1, 3.0, 0)
    assert oha.OHA.describe(OPEN, open_result) == {"rate": rate}
    assert oha.OHA.describe(CLOSED, LoadResult([], {"requests": 1}, 0.1, 3.0, 0)) == {}


def test_generator_wrk_oha_k6_plans_the_same_closed_loop_case_with_all_three():
    points = load_points(Settings(generators=("wrk", "oha", "k6")))
    assert [(p.generator, p.rate) for p in points] == [("wrk", None), ("oha", None),
                                                       ("k6", None)]
    assert [p.suffix for p in points] == ["", "@oha", "@k6"]
    validate(Settings(generators=("oha",)), [])
    assert [p.generator for p in load_points(Settings(generators=("oha",)))] == ["oha"]


def test_oha_rate_shares_stay_of_wrks_maximum():
    """The default --rate (wrk, oha) plans and means what it did; with oha's closed loop
    asked for too, an oha rate point still refers to wrk's maximum (same case id, same
    meaning); without wrk a share has no base, a rate in req/s needs none."""
    default = load_points(Settings(rates=("50%",)))
    assert [(p.generator, p.rate) for p in default] == [("wrk", None), ("oha", "50%")]
    points = load_points(Settings(generators=("wrk", "oha"), rates=("50%",)))
    assert [(p.generator, p.rate) for p in points] == [("wrk", None), ("oha", None),
                                                       ("oha", "50%")]
    assert points[2].closed_loop == points[0]
    with pytest.raises(SelectionError, match="runs no wrk"):
        validate(Settings(generators=("oha",), rates=("50%",)), [])
    validate(Settings(generators=("oha",), rates=("100",)), [])
    with pytest.raises(SelectionError, match="--rate"):
        validate(Settings(generators=("oha",), rates=("0",)), [])


def test_preflight_needs_oha_for_its_closed_loop_too():
    nginx = manifest.discover()["nginx"]
    context = SimpleNamespace(placement=SimpleNamespace(pinned=False),
                              settings=SimpleNamespace(verify=True, protocols=("h1",)))

    def cases(*params):
        return [Case(Variant(nginx, "none", False), "plain", p) for p in params]
    assert "oha" not in preflight.tools_needed(context, cases(LoadParams(16)), FOR_RUN)
    closed = preflight.tools_needed(context, cases(LoadParams(16, generator="oha")), FOR_RUN)
    assert closed["oha"] == "--generator oha (the closed loop)" and "wrk" in closed
    rated = preflight.tools_needed(context, cases(LoadParams(16, generator="oha"),
                                                  LoadParams(16, generator="oha", rate="50%")),
                                   FOR_RUN)
    assert rated["oha"].startswith("--rate")
    assert not {"h2load", "h2spec"} & set(rated)


def test_preflight_needs_h2load_for_http2_cases_and_h2spec_to_verify_them():
    nginx = manifest.discover()["nginx"]
    h2 = [Case(Variant(nginx, "none", False), "plain",
               LoadParams(16, generator="h2load", proxy="nginx", protocol="h2"))]
    for verify in (True, False):
        context = SimpleNamespace(placement=SimpleNamespace(pinned=False),
                                  settings=SimpleNamespace(verify=verify, protocols=("h2",),
                                                           behind=("none",)))
        need = preflight.tools_needed(context, h2, FOR_RUN)
        assert need["h2load"].startswith("--protocol h2/h2c")
        assert ("h2spec" in need) == verify        # --no-verify: no conformance to check


def test_a_closed_loop_table_names_oha_an_open_model_table_does_not():
    assert describe_load(16, "keep-alive", "none", "wrk") == "16 connections, keep-alive"
    assert describe_load(16, "keep-alive", "none", "oha") == "16 connections, keep-alive, oha"
    assert describe_load(16, "keep-alive", "none", "oha", open_model=True) == \
        "16 connections, keep-alive"
    assert describe_load(16, "keep-alive", "none", "k6", open_model=True).endswith(", k6")
