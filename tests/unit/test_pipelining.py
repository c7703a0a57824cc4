"""The pipelined test on numbers and text alone: what a run may combine with it
(bench.core.pipelining, bench.core.settings), its cases and their keys (bench.core.plan),
wrk's argv and request accounting with batches (bench.load.wrk), the generators that
pipeline (bench.load's registry against core's list) and the gain-over-plain notes of
the tables (bench.report.pipelined)."""
from __future__ import annotations

import pytest

from bench import load
from bench.core import pipelining
from bench.core.manifest import discover
from bench.core.plan import LoadParams, plan
from bench.core.settings import SelectionError, Settings, validate
from bench.load import wrk
from bench.load.generator import LoadError, LoadRequest
from bench.paths import SERVERS_DIR
from bench.report.workloads import gain_over_plain
from bench.report.tables import Row, Table, load_params
from bench.analysis.statistics import Spread

SPECS = discover([SERVERS_DIR])


def problems(tests=("pipelined",), depth=16, closed=("wrk",), protocols=("h1",), rates=(),
             modes=("keep-alive",), burst=0.0):
    return pipelining.problems(tests, depth, closed, protocols, rates, modes, burst)


def test_what_the_pipelined_test_may_be_combined_with():
    assert problems() == [] and problems(protocols=("h1", "h1-tls")) == []
    assert problems(depth=2) == [] and problems(depth=256) == []
    for depth in (1, 0, 257, 16.0, True):
        assert "--pipeline must be a whole number from 2 to 256" in problems(depth=depth)[0]
    assert "only wrk pipelines" in problems(closed=("wrk", "k6"))[0]
    assert "HTTP/2 runs requests side by side" in problems(protocols=("h1", "h2c"))[0]
    assert "open-model generators (oha, k6) do not pipeline" in problems(rates=("50%",))[0]
    assert "nothing to pipeline" in problems(modes=("keep-alive", "close"))[0]
    assert "cannot pipeline" in problems(burst=5.0)[0]
    # without the test, only the depth is checked
    assert problems(tests=("plain",), closed=("k6",), protocols=("h2",), burst=5) == []
    assert len(problems(tests=("plain",), depth=1)) == 1


def test_settings_refuse_an_impossible_pipelined_run_before_anything_starts():
    ids = list(SPECS)
    validate(Settings(tests=("plain", "pipelined")), ids)
    with pytest.raises(SelectionError, match="only wrk pipelines"):
        validate(Settings(tests=("pipelined",), generators=("oha",)), ids)
    # oha runs the closed loop too when named; the rates' default (oha) never pipelines
    with pytest.raises(SelectionError, match="only wrk pipelines"):
        validate(Settings(tests=("pipelined",), generators=("wrk", "oha")), ids)
    with pytest.raises(SelectionError, match="do not pipeline"):
        validate(Settings(tests=("pipelined",), rates=("50%",)), ids)
    with pytest.raises(SelectionError, match="--pipeline must be"):
        validate(Settings(pipeline=1), ids)
    assert Settings(tests=("pipelined",)).pipelined_depth == 16
    assert Settings(tests=("plain",), pipeline=4).pipelined_depth is None


def test_a_pipelined_case_carries_its_depth_in_its_key_and_id():
    cases = plan(Settings(servers=("gin",), tests=("plain", "pipelined"), pipeline=8,
                          ceiling=False), SPECS)
    by_test = {c.test: c for c in cases}
    assert set(by_test) == {"plain", "pipelined"}
    piped, plain = by_test["pipelined"], by_test["plain"]
    assert piped.load.pipeline == 8 and plain.load.pipeline == 1
    assert piped.key()["pipeline"] == 8 and "pipeline" not in plain.key()
    assert piped.id.endswith("/pipelined@c64@pipeline8") and plain.id.endswith("/plain@c64")
    assert piped.variant.database == "none"
    assert LoadParams(64, pipeline=8, generator="k6", rate="50%").closed_loop.pipeline == 8
    assert load_params({"key": piped.key()})[1] == \
        "keep-alive, pipelined 8 deep (latency per batch)"


def test_wrk_writes_batches_and_counts_their_requests():
    s = wrk.LoadSettings(threads=1, connections=4, duration_s=1, pipeline=16)
    argv = wrk.wrk_command("pipelined", "http://h:1", s)
    assert argv[-1] == "pipeline=16" and argv[argv.index("-s") + 1].endswith("pipelined.lua")
    with pytest.raises(ValueError, match="only it pipelines"):
        wrk.wrk_command("plain", "http://h:1", s)
    with pytest.raises(ValueError, match="only it pipelines"):
        wrk.wrk_command("pipelined", "http://h:1",
                        wrk.LoadSettings(threads=1, connections=1, duration_s=1))
    with pytest.raises(ValueError, match="pipeline must be"):
        wrk.LoadSettings(threads=1, connections=1, duration_s=1, pipeline=0)
    # the scripts count requests (a batch is 16); wrk's unsent check batch is taken off
    line = ('WRK_JSON {"requests": 1000, "duration_us": 1000000, "bytes": 10, "errors": {}, '
            '"latency_us": {}, "threads": [{"index": 1, "sent": %d}]}')
    in_flight = wrk._normalise(wrk._find_json(line % (1000 + 16 + 4 * 16)), 4, 16)
    assert in_flight["sent"] == 1064 and in_flight["errors"]["lost"] == 0
    lost = wrk._normalise(wrk._find_json(line % (1000 + 16 + 4 * 16 + 5)), 4, 16)
    assert lost["errors"]["lost"] == 5 and lost["errors"]["total"] == 5
    # without the depth, the same figures would call the in-flight batches lost
    assert wrk._normalise(wrk._find_json(line % 1080), 4)["errors"]["lost"] > 0


def test_only_generators_that_pipeline_are_given_a_batch():
    assert tuple(name for name, g in load.GENERATORS.items() if load.pipelines(g)) == \
        pipelining.PIPELINING_GENERATORS
    request = LoadRequest(test="pipelined", base_url="http://h:1", connections=1, threads=1,
                          duration_s=1, timeout_s=1, seed=1, token="t", pipeline=16)
    assert load.for_request(request).name == "wrk"
    with pytest.raises(LoadError, match="oha does not pipeline"):
        load.for_request(request, closed_loop="oha")


def row(server: str, rps: float | None, status: str = "ok") -> Row:
    return Row(test="plain", server=server, database="None", orm="None", status=status, reason=None,
               rps=Spread(n=1, median=rps, min=rps, max=rps, mean=rps, stdev=None, cv=None,
                          ci_low=None, ci_high=None), latency_ms={})


def table(test: str, mode: str, rows: list[Row], connections: int = 64) -> Table:
    return Table(test, test, {"connections": connections, "connection_mode": mode,
                              "generator": "wrk", "proxy": "none"}, rows=rows)


def test_the_pipelined_table_says_what_pipelining_gave_each_server():
    deep = "keep-alive, pipelined 16 deep (latency per batch)"
    plain = table("plain", "keep-alive", [row("a", 10_000), row("b", 10_000), row("c", 5)])
    piped = table("pipelined", deep, [row("a", 30_000), row("b", 10_500), row("c", None, "failed"),
                                      row("d", 9_000)])
    other = table("pipelined", deep, [row("a", 1)], connections=256)   # no plain at 256
    gain_over_plain([plain, piped, other])
    assert piped.notes[0] == "a: 3.00x its plain req/s (10,000) in this run, its gain from pipelining"
    assert piped.notes[1].startswith("b: 1.05x its plain req/s (10,000) in this run, no clear gain")
    assert len(piped.notes) == 2 and piped.rows[0].notes == [1] and piped.rows[2].notes == []
    assert other.notes == [] and plain.notes == []


def test_list_describes_every_test_the_run_knows():
    from bench.core.settings import KNOWN_TESTS
    from bench.core.workloads import DESCRIPTIONS
    assert tuple(DESCRIPTIONS) == KNOWN_TESTS


def test_a_server_that_declares_a_workload_unsupported_is_left_out_and_shown_so():
    import dataclasses
    from bench.core.plan import not_supported
    specs = dict(SPECS)
    specs["gin"] = dataclasses.replace(SPECS["gin"], unsupported={"upload": "no body here"})
    settings = Settings(servers=("gin", "fasthttp"), tests=("upload", "delay"), ceiling=False)
    cases = plan(settings, specs)
    assert {(c.variant.server.id, c.test, c.size) for c in cases} == {
        ("gin", "delay", None), ("fasthttp", "delay", None), ("fasthttp", "upload", "64k"),
        ("fasthttp", "upload", "1m")}
    left = not_supported(settings, specs)
    assert left == [{"server": "gin", "test": "upload", "reason": "no body here"}]


def test_list_names_what_a_server_does_not_support_and_why(capsys):
    import dataclasses
    from bench.cli import cmd_list
    specs = {"gin": dataclasses.replace(SPECS["gin"], unsupported={"upload": "no body here"})}
    assert cmd_list(specs) == 0
    out = capsys.readouterr().out
    assert "not supported" in out and "no body here" in out
    assert "pipelined" in out and "mixed" in out and "static" in out
