"""The load-generator seam: the registry picks a tool by model, each tool maps the
neutral request onto its own settings, and a tool asked for the wrong model refuses."""
import pytest

from bench import load
from bench.load import oha, wrk
from bench.load.generator import LoadError, LoadRequest

CLOSED = LoadRequest(test="plain", base_url="http://127.0.0.1:1", connections=8, threads=2,
                     duration_s=3, timeout_s=2, seed=5, token="tok", connection_close=True)
OPEN = LoadRequest(test="plain", base_url="http://127.0.0.1:1", connections=8, threads=2,
                   duration_s=3, timeout_s=2, seed=5, token="tok", rate=250.0)


def test_the_registry_picks_the_closed_loop_or_the_open_model_generator():
    assert load.for_request(CLOSED) is wrk.WRK
    assert load.for_request(OPEN) is oha.OHA


def test_an_unknown_generator_names_the_known_ones():
    with pytest.raises(LoadError, match="known: oha, wrk"):
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
