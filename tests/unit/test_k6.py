"""Tests of bench/load/k6.py, k6_scripts/ and --generator without running k6.

The parser is tested on real k6 v1.8.1 output in tests/fixtures/k6/ (capture.py there
recorded each, against real servers; its docstring lists the scenarios). The tests that
run k6 are in tests/integration/test_k6.py.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.core.plan import LoadParams, load_points
from bench.core.settings import GENERATOR_MODELS, SelectionError, Settings, validate
from bench.infra.host import Completed
from bench.load import k6, models, wrk
from bench.load import generator as load_generator
from bench.load.generator import LoadError, LoadRequest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "k6"
BASE = "http://127.0.0.1:18180"


def parsed(name: str) -> tuple[dict, dict]:
    meta = json.loads((FIXTURES / f"{name}.meta.json").read_text())
    settings = k6.K6Settings(meta["connections"], meta["duration_s"],
                             timeout_s=meta["timeout_s"], rate=meta["rate"],
                             iterations=meta["iterations"], token=meta["token"])
    return k6.parse_k6_output((FIXTURES / f"{name}.txt").read_text(), settings=settings), meta


# ----------------------------------------------------------------- the normalised summary

def test_a_clean_closed_loop_run_has_wrks_keys_and_units():
    s, meta = parsed("plain_closed")
    wrk_keys = set(wrk.parse_wrk_output(
        'WRK_JSON {"requests": 1, "duration_us": 1000000, "bytes": 10, "errors": {}, '
        '"latency_us": {"min": 1, "max": 1, "mean": 1, "p50": 1}}'))
    assert wrk_keys <= set(s)
    assert s["requests"] == s["sent"] > 1000 and s["unanswered"] == 0
    assert s["errors"] == {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0,
                           "lost": 0, "total": 0}
    assert s["duration_s"] == pytest.approx(2.0, abs=0.1)
    assert s["requests_per_sec"] == pytest.approx(s["requests"] / s["duration_s"])
    assert s["bytes"] > s["requests"] * 100          # headers included, as wrk counts
    latency = s["latency_ms"]
    order = [latency[k] for k in ("min", "p50", "p75", "p90", "p99", "p99_9", "max")]
    assert order == sorted(order) and all(v > 0 for v in order)
    assert latency["stdev"] is None and latency["mean"] > 0
    assert s["latency_histogram"] is None and "percentiles only" in s["latency_histogram_error"]
    assert "rate" not in s and meta["exit_code"] == 0


def test_latency_is_k6s_http_req_duration_in_ms():
    s, _ = parsed("plain_closed")
    raw = json.loads((FIXTURES / "plain_closed.txt").read_text().split(k6.JSON_MARKER)[1])
    trend = raw["metrics"]["http_req_duration"]["values"]
    assert s["latency_ms"]["p99"] == trend["p(99)"] and s["latency_ms"]["mean"] == trend["avg"]
    assert trend["count"] == s["requests"]


def test_iterations_are_the_seed_reports_shape():
    s, _ = parsed("plain_iterations")
    assert s["iterations"] == {"asked": 2000, "completed": 2000}
    assert s["requests"] == 2000


def test_the_open_model_rate_block():
    s, _ = parsed("plain_rate")
    assert s["rate"]["asked"] == 200.0
    assert s["rate"]["achieved"] == pytest.approx(200, rel=0.03)
    assert s["rate"]["not_sent"] == s["rate"]["dropped_iterations"] == 0
    assert s["rate"]["late"] == 0


def test_dropped_iterations_are_the_requests_not_sent():
    s, _ = parsed("plain_unreachable_rate")
    rate = s["rate"]
    assert rate["dropped_iterations"] > 100_000
    assert rate["achieved"] < 0.01 * rate["asked"]
    # k6's own count falls short when k6 itself cannot keep up (its ticker lags too):
    # not_sent is every due request that was not sent, as oha's
    assert rate["not_sent"] == 1_000_000 * 2 - s["sent"] > rate["dropped_iterations"]


def test_status_errors_for_a_wrong_token_and_a_missing_route():
    for name in ("plain_wrong_token", "update_user_no_database"):
        s, _ = parsed(name)
        assert s["requests"] > 0
        assert s["errors"]["status"] == s["requests"] == s["errors"]["total"], name


def test_timeouts_are_unanswered_requests():
    s, _ = parsed("plain_timeouts")
    assert s["requests"] == 0 and s["sent"] == s["unanswered"] == s["errors"]["timeout"] > 0
    assert all(v is None for v in s["latency_ms"].values())


def test_a_closed_port_is_connect_errors_and_nothing_sent():
    s, _ = parsed("plain_closed_port")
    assert s["sent"] == s["requests"] == 0
    assert s["errors"]["connect"] == s["errors"]["total"] > 0


def test_a_dropped_get_is_resent_by_gos_client():
    """broken_drops_connections closes every 50th connection unanswered; Go's HTTP client
    (k6's) sends a GET again when a reused connection closes before any byte of its
    answer, so k6 counts no error where wrk and oha count read errors (README)."""
    s, _ = parsed("plain_dropped")
    assert s["requests"] > 500 and s["errors"]["total"] == 0


def test_connection_close_mode_is_noconnectionreuse():
    _, meta = parsed("to_json_connection_close")
    assert "BENCH_CLOSE=1" in meta["command"]


def test_no_k6_json_line_is_a_load_error():
    with pytest.raises(LoadError, match="no K6_JSON"):
        k6.parse_k6_output("ERRO[0000] script error\n", settings=k6.K6Settings(1, 1.0))
    with pytest.raises(LoadError, match="malformed"):
        k6.parse_k6_output("K6_JSON {nope\n", settings=k6.K6Settings(1, 1.0))


def test_error_kinds_are_those_of_common_js():
    text = (ROOT / "k6_scripts" / "common.js").read_text()
    listed = re.search(r"ERROR_KINDS = \[([^\]]*)\]", text).group(1)
    assert sorted(k.strip(" '") for k in listed.split(",")) == sorted(k6.ERROR_KINDS)


# ----------------------------------------------------------------- the command

def test_closed_and_open_commands():
    closed = k6.k6_command("get user", BASE + "/", k6.K6Settings(64, 10.0, seed=7, n=None))
    assert closed[:2] == ["k6", "run"] and "--no-usage-report" in closed
    assert closed[closed.index("--address") + 1] == ""
    env = dict(closed[i + 1].split("=", 1) for i, a in enumerate(closed) if a == "-e")
    assert env == {"BENCH_BASE_URL": BASE, "BENCH_TOKEN": "hardcoded_token",
                   "BENCH_SEED": "7", "BENCH_VUS": "64", "BENCH_DURATION": "10",
                   "BENCH_TIMEOUT": "5"}
    assert closed[-1].endswith("k6_scripts/get_user.js")
    open_ = k6.k6_command("queries", BASE, k6.K6Settings(8, 2.5, rate=1234.5, n=20,
                                                         connection_close=True))
    env = dict(open_[i + 1].split("=", 1) for i, a in enumerate(open_) if a == "-e")
    assert env["BENCH_RATE"] == "1234500" and env["BENCH_TIME_UNIT"] == "1000"
    assert env["BENCH_MAX_VUS"] == "8" and env["BENCH_N"] == "20"
    assert env["BENCH_CLOSE"] == "1" and env["BENCH_DURATION"] == "2.5"


def test_every_test_has_a_script_like_wrks():
    # `mixed` whether or not wrk.py has it yet
    from bench.core.workloads import HTTP_WORKLOADS
    # and websocket (k6_scripts/websocket.js: its own default function, k6/websockets)
    assert set(k6.TEST_SCRIPTS) == set(wrk.TEST_SCRIPTS) - set(HTTP_WORKLOADS) | {
        "mixed", "websocket"}
    assert k6.script_for("mixed") == k6.SCRIPTS_DIR / "mixed.js"
    for test, script in k6.TEST_SCRIPTS.items():
        text = (ROOT / "k6_scripts" / script).read_text()
        default = "export default function" if test == "websocket" else \
            "export default t.iteration"
        assert default in text and "handleSummary" in text, script


def test_settings_are_checked():
    with pytest.raises(ValueError):
        k6.K6Settings(0, 1.0)
    with pytest.raises(ValueError):
        k6.K6Settings(1, 1.0, rate=0)
    with pytest.raises(ValueError):
        k6.K6Settings(1, 1.0, rate=10, iterations=5)
    assert k6.rate_args(200.0) == (200, 1)


class FakeHost:
    """A host whose k6 says `line` (None: no k6 anywhere)."""
    remote = False

    def __init__(self, line):
        self.line = line

    def cache_dir(self):
        return "/cache/webbench"

    def which(self, tool):
        return None

    def run(self, argv, **kwargs):
        if self.line is None:
            raise FileNotFoundError(argv[0])
        return Completed(argv, 0, self.line + "\n", "", 0.0, 0.0)


def test_missing_or_old_k6_is_a_clear_error():
    with pytest.raises(LoadError, match="make setup"):
        k6.require_k6(FakeHost(None))
    with pytest.raises(LoadError, match="older than v1.0.0"):
        k6.require_k6(FakeHost("k6 v0.52.0 (go1.22.4, linux/amd64)"))
    assert k6.require_k6(FakeHost("k6 v1.8.1 (go1.26.8, linux/amd64)")) == \
        ("/cache/webbench/bin/k6", "k6 v1.8.1 (go1.26.8, linux/amd64)")


# ----------------------------------------------------------------- the seam and --generator

def test_the_registry_and_core_agree_on_the_models():
    assert models() == GENERATOR_MODELS


def test_k6_runs_both_models_behind_the_seam():
    request = LoadRequest("plain", BASE, 16, 2, 1.0, 5.0, 1, "t")
    assert load_generator("k6").name == "k6"
    from bench.load import for_request
    assert for_request(request, closed_loop="k6").name == "k6"
    rated = LoadRequest("plain", BASE, 16, 2, 1.0, 5.0, 1, "t", rate=100)
    assert for_request(rated, open_model="k6").name == "k6"
    with pytest.raises(LoadError):
        for_request(rated, open_model="wrk")
    gen = k6.K6_GENERATOR
    settings = gen.settings(rated)
    assert settings.rate == 100 and settings.threads == 2 and settings.connections == 16


def test_generator_k6_plans_closed_and_open_cases_on_k6_alone():
    s = Settings(generators=("k6",), rates=("50%",))
    points = load_points(s)
    assert [p.generator for p in points] == ["k6", "k6"]
    assert points[1].rate == "50%" and points[1].closed_loop == points[0]


def test_generator_wrk_k6_with_rates():
    points = load_points(Settings(generators=("wrk", "k6"), rates=("100",)))
    assert [(p.generator, p.rate) for p in points] == [("wrk", None), ("k6", None),
                                                       ("k6", "100")]
    # the default stays wrk and oha, with the same case ids as before
    default = load_points(Settings(rates=("50%",)))
    assert [(p.generator, p.rate) for p in default] == [("wrk", None), ("oha", "50%")]
    assert default[1].closed_loop == LoadParams(default[0].connections, "keep-alive", "wrk")


def test_unknown_generator_and_a_share_without_its_base_are_refused():
    with pytest.raises(SelectionError, match="--generator"):
        validate(Settings(generators=("ab",)), [])
    with pytest.raises(SelectionError, match="runs no wrk"):
        validate(Settings(generators=("k6", "oha"), rates=("50%",)), [])


def test_iterations_are_k6s_closed_loop_only():
    validate(Settings(generators=("k6",), iterations=100_000, connections=1000), [])
    for generators in (("wrk",), ("wrk", "k6"), ("oha", "k6")):
        with pytest.raises(SelectionError, match="closed loop measured by (wrk|oha)"):
            validate(Settings(generators=generators, iterations=10), [])
    for bad in (0, -5, True, 2.5):
        with pytest.raises(SelectionError, match=r"whole number >= 1\) is k6's closed loop: got"):
            validate(Settings(generators=("k6",), iterations=bad), [])
    # recorded only when asked for, so runs before --iterations keep their settings
    assert "iterations" not in Settings().public()
    assert Settings(generators=("k6",), iterations=7).public()["iterations"] == 7


def test_iterations_reach_k6_for_the_closed_loop_and_never_for_a_rate():
    closed = LoadRequest("plain", BASE, 1000, 2, 30.0, 5.0, 1, "t", iterations=100_000)
    settings = k6.K6_GENERATOR.settings(closed)
    assert settings.iterations == 100_000
    assert "BENCH_ITERATIONS=100000" in k6.k6_command("plain", BASE, settings)
    rated = LoadRequest("plain", BASE, 16, 2, 1.0, 5.0, 1, "t", rate=100, iterations=50)
    assert k6.K6_GENERATOR.settings(rated).iterations is None


def test_over_https_k6_keeps_to_tls_1_3_and_trusts_the_runs_ca_only(monkeypatch):
    """The command says https (BENCH_TLS13: TLS 1.3 only); the run's CA reaches k6 as
    SSL_CERT_FILE, and HTTP/2 is off in Go's client (GODEBUG), so h1-tls is HTTP/1.1."""
    over_tls = k6.k6_command("plain", "https://127.0.0.1:18180", k6.K6Settings(4, 1.0))
    assert "BENCH_TLS13=1" in over_tls
    assert "BENCH_TLS13=1" not in k6.k6_command("plain", BASE, k6.K6Settings(4, 1.0))
    seen = {}

    class Host:
        def base_environment(self):
            return {}

        def project_path(self, path):
            return str(path)

        def run(self, argv, *, timeout, env, on_start, cpus):
            seen.update(env)
            return Completed(argv, 0, "", "", 0.1, 1.0, False)
    monkeypatch.setattr(k6, "require_k6", lambda host: ("/usr/bin/k6", "k6 v1.8.1"))
    with pytest.raises(LoadError):      # no K6_JSON line: the command ran, then failed
        k6.run_k6("plain", "https://127.0.0.1:18180",
                  k6.K6Settings(4, 1.0, ca_file="/run/tls/ca.pem"), host=Host())
    assert seen["SSL_CERT_FILE"] == "/run/tls/ca.pem" and seen["GODEBUG"] == "http2client=0"


def test_answers_over_another_protocol_are_an_error_of_the_sample():
    assert k6.protocol_problem({"metrics": {}}) is None
    raw = {"metrics": {"bench_other_protocol": {"values": {"count": 12, "rate": 6.0}}}}
    assert k6.protocol_problem(raw) == \
        "k6: 12 of its answers came over another protocol than HTTP/1.1"
    script = (ROOT / "k6_scripts" / "common.js").read_text()
    assert "res.proto !== 'HTTP/1.1'" in script and "bench_other_protocol" in script


# ----------------------------------------------------------------- the mixed test

MIX = "get_user:60,update_user:15,queries.5:10,fortunes:10,to_json:5"


def k6_json(metrics: dict, duration_ms: float = 2000.0) -> str:
    """A K6_JSON line of k6's shape (tests/fixtures/k6/*.txt) with these metrics."""
    return k6.JSON_MARKER + json.dumps({"metrics": metrics, "state": {
        "testRunDurationMs": duration_ms, "isStdOutTTY": False, "isStdErrTTY": False}})


def trend(count: int, base: float) -> dict:
    """A http_req_duration trend's values as common.js's summaryTrendStats has them."""
    return {"type": "trend", "contains": "time", "values": {
        "min": base, "avg": base * 2, "max": base * 9, "med": base * 2, "p(50)": base * 2,
        "p(75)": base * 3, "p(90)": base * 4, "p(99)": base * 6, "p(99.9)": base * 8,
        "count": count}}


def counter(count: int) -> dict:
    return {"type": "counter", "contains": "default",
            "values": {"count": count, "rate": count / 2.0}}


def test_a_mixed_command_carries_the_mix():
    argv = k6.k6_command("mixed", BASE, k6.K6Settings(4, 2.0, mix=MIX))
    env = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "-e")
    assert env["BENCH_MIX"] == MIX
    assert argv[-1].endswith("k6_scripts/mixed.js")


def test_a_mixed_run_without_a_mix_or_with_a_malformed_one_is_refused():
    with pytest.raises(ValueError, match="mixed test needs a mix"):
        k6.k6_command("mixed", BASE, k6.K6Settings(4, 2.0))
    for bad in ("", "get_user", "get_user:0", "get_user:-1", "get user:5", "get_user:60,",
                "queries.:5", "get_user:1,get_user:2"):
        with pytest.raises(ValueError, match="mix"):
            k6.K6Settings(4, 2.0, mix=bad)


def test_the_mix_reaches_k6s_settings_from_the_request():
    request = LoadRequest("mixed", BASE, 16, 2, 1.0, 5.0, 1, "t", mix=MIX)
    assert k6.K6_GENERATOR.settings(request).mix == MIX


def test_endpoints_are_the_tagged_submetrics_of_each_key():
    """k6 keys a tagged submetric `name{tag:value}` (the thresholds mixed.js sets make
    them). An endpoint that got no request has, in k6 v1.8.1, its submetrics with count 0
    and every trend value 0 (fortunes here); one k6 left out (to_json) is read the same:
    sent 0, no latency."""
    metrics = {"http_reqs": counter(1000), "http_req_duration": trend(1000, 1.0)}
    for key, sent, base in (("get_user", 600, 1.0), ("update_user", 250, 2.0),
                            ("queries.5", 150, 3.0), ("fortunes", 0, 0.0)):
        metrics[f"http_reqs{{endpoint:{key}}}"] = counter(sent)
        metrics[f"http_req_duration{{endpoint:{key}}}"] = trend(sent, base)
    s = k6.parse_k6_output(k6_json(metrics), settings=k6.K6Settings(4, 2.0, mix=MIX))
    assert list(s["endpoints"]) == ["get_user", "update_user", "queries.5", "fortunes",
                                    "to_json"]
    assert s["endpoints"]["update_user"] == {"sent": 250, "latency_ms": {
        "min": 2.0, "mean": 4.0, "stdev": None, "max": 18.0, "p50": 4.0, "p75": 6.0,
        "p90": 8.0, "p99": 12.0, "p99_9": 16.0}}
    for key in ("fortunes", "to_json"):
        assert s["endpoints"][key] == {"sent": 0, "latency_ms": dict.fromkeys(
            wrk.LATENCY_KEYS)}, key
    assert list(s["endpoints"]["get_user"]["latency_ms"]) == list(s["latency_ms"])
    assert sum(e["sent"] for e in s["endpoints"].values()) == s["sent"] == 1000
    # a run without a mix has no endpoints
    assert "endpoints" not in k6.parse_k6_output(k6_json(metrics),
                                                 settings=k6.K6Settings(4, 2.0))


def test_the_parser_reads_the_submetrics_mixed_js_asks_k6_for():
    script = (ROOT / "k6_scripts" / "mixed.js").read_text()
    assert "`http_req_duration{endpoint:${e.key}}`" in script
    assert "`http_reqs{endpoint:${e.key}}`" in script
    assert "tags: { endpoint: tag }" in (ROOT / "k6_scripts" / "common.js").read_text()


def test_common_js_builds_every_test_a_mix_may_draw():
    from bench.core.mix import MIX_TESTS
    text = (ROOT / "k6_scripts" / "common.js").read_text()
    block = text[text.index("export const REQUESTS = {"):]
    block = block[:block.index("\n};")]
    keys = set(re.findall(r"^  (\w+): \{", block, re.M))
    assert keys == {test.replace(" ", "_") for test in MIX_TESTS}
