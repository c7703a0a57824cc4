"""Tests of bench/load/oha.py without running oha.

The parser is tested on real oha 1.16.0 reports in tests/fixtures/oha/ (see its README
and capture.py for how each was recorded). The tests that run oha are in
tests/integration/test_oha.py.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.infra.host import Completed  # noqa: E402
from bench.load import oha  # noqa: E402
from bench.load.oha import OhaSettings  # noqa: E402
from bench.load.wrk import LoadError, parse_wrk_output  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "oha"
WRK_DATA = ROOT / "tests" / "unit" / "data"
BASE = "http://127.0.0.1:18280"


def fixture(name: str) -> tuple[str, dict]:
    return (FIXTURES / f"{name}.json").read_text(), \
        json.loads((FIXTURES / f"{name}.meta.json").read_text())


def parsed(name: str, connections: int | None = None) -> dict:
    text, meta = fixture(name)
    return oha.parse_oha_json(text, asked_rate=meta["asked_rate"],
                              duration_s=meta["duration_s"],
                              connections=meta["connections"] if connections is None
                              else connections)


def option(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


# --------------------------------------------------------------------------- settings

@pytest.mark.parametrize("kwargs", [
    {"connections": 0}, {"connections": True}, {"rate": 0}, {"rate": 0.0}, {"rate": -5},
    {"rate": float("nan")}, {"rate": float("inf")}, {"rate": "100"}, {"rate": True},
    {"duration_s": 0}, {"timeout_s": 0}, {"token": ""}, {"token": "a b"},
    {"token": "x\r\nEvil: 1"}, {"worker_threads": 0},
])
def test_settings_refuse_what_oha_would_misread(kwargs):
    args = {"connections": 16, "rate": 100.0, "duration_s": 2.0, **kwargs}
    with pytest.raises(ValueError):
        OhaSettings(**args)


def test_a_rate_of_zero_is_never_the_closed_loop_none_is():
    # oha reads -q 0 as "no rate limit": a zero would silently be the closed loop
    with pytest.raises(ValueError, match="None: the closed loop"):
        OhaSettings(16, 0, 2.0)
    assert not OhaSettings(16, None, 2.0).open_model
    assert OhaSettings(16, 100, 2.0).open_model


def test_settings_threads_are_what_runs():
    assert OhaSettings(4, 10, 1, worker_threads=3).threads == 3
    assert OhaSettings(4, 10, 1).threads >= 1


# --------------------------------------------------------------------------- command

def test_command_is_the_open_model_with_a_fixed_rate():
    argv = oha.oha_command("plain", BASE + "/", OhaSettings(16, 2500, 2.5, timeout_s=1.5))
    assert argv[0] == "oha"
    assert option(argv, "-c") == "16"
    assert option(argv, "-q") == "2500"
    assert option(argv, "-z") == "2500ms"
    assert option(argv, "-t") == "1500ms"
    assert option(argv, "--output-format") == "json"
    assert option(argv, "-H") == "token: hardcoded_token"
    for flag in ("--latency-correction", "--no-tui", "-w", "--disable-compression"):
        assert flag in argv
    assert "--disable-keepalive" not in argv and "-m" not in argv and "-Z" not in argv
    assert argv[-2] == "--rand-regex-url"


def test_command_without_a_rate_is_the_closed_loop():
    """No -q (no rate limit: each connection sends its next request when the last is
    answered) and no --latency-correction (nothing is due, every latency is from its
    send); everything else as the open model's, worker threads as asked."""
    closed = oha.oha_command("plain", BASE, OhaSettings(16, None, 2.5, timeout_s=1.5,
                                                        worker_threads=1))
    rated = oha.oha_command("plain", BASE, OhaSettings(16, 2500, 2.5, timeout_s=1.5,
                                                       worker_threads=1))
    assert "-q" not in closed and "--latency-correction" not in closed
    i = rated.index("-q")
    assert rated[i:i + 3] == ["-q", "2500", "--latency-correction"]
    assert closed == rated[:i] + rated[i + 3:]
    assert option(closed, "-c") == "16" and option(closed, "-z") == "2500ms"
    assert option(closed, "--worker-threads") == "1" and "-w" in closed


def test_command_of_the_recorded_closed_loop_fixture_is_todays():
    meta = fixture("plain_closed_loop")[1]
    settings = OhaSettings(meta["connections"], None, meta["duration_s"], worker_threads=1)
    base = meta["command"][-1].split("/plain/")[0]
    assert meta["asked_rate"] is None
    assert oha.oha_command("plain", base, settings) == meta["command"]


def test_command_rate_is_never_rounded_or_an_exponent():
    assert option(oha.oha_command("plain", BASE, OhaSettings(1, 1234567, 1)), "-q") == "1234567"
    assert option(oha.oha_command("plain", BASE, OhaSettings(1, 0.25, 1)), "-q") == "0.25"


def test_command_duration_override_for_a_warmup():
    argv = oha.oha_command("to json", BASE, OhaSettings(2, 10, 5), duration_s=1)
    assert option(argv, "-z") == "1000ms"
    with pytest.raises(ValueError):
        oha.oha_command("to json", BASE, OhaSettings(2, 10, 5), duration_s=0)


def test_connection_close_drops_every_connection():
    argv = oha.oha_command("plain", BASE, OhaSettings(2, 10, 1, connection_close=True))
    assert "--disable-keepalive" in argv


def test_update_user_sends_a_json_patch_body_from_the_bodies_file(tmp_path):
    bodies = tmp_path / "b.jsonl"
    argv = oha.oha_command("update user", BASE, OhaSettings(2, 10, 1, token="t0k"),
                           bodies_file=bodies)
    assert option(argv, "-m") == "PATCH"
    assert option(argv, "-T") == "application/json"
    assert option(argv, "-Z") == str(bodies)
    assert option(argv, "-H") == "token: t0k"
    assert argv[-1] == f"{BASE}/user/{oha.id_regex()}"
    with pytest.raises(ValueError, match="bodies_file"):
        oha.oha_command("update user", BASE, OhaSettings(2, 10, 1))


def test_worker_threads_only_when_asked():
    assert "--worker-threads" not in oha.oha_command("plain", BASE, OhaSettings(2, 10, 1))
    argv = oha.oha_command("plain", BASE, OhaSettings(2, 10, 1, worker_threads=1))
    assert option(argv, "--worker-threads") == "1"


def test_unknown_test_and_bad_url_are_refused():
    with pytest.raises(ValueError, match="unknown test"):
        oha.oha_command("get users", BASE, OhaSettings(2, 10, 1))
    with pytest.raises(ValueError, match="http"):
        oha.oha_command("plain", "127.0.0.1:80", OhaSettings(2, 10, 1))


# --------------------------------------------------------------------------- URL regexes

@pytest.mark.parametrize("test,endpoint", [("plain", "plain"), ("to json", "to_json")])
def test_param_urls_match_the_wrk_scripts(test, endpoint):
    # wrk_scripts: three params of random_alnum(4, 12) each; "?" must be a literal
    assert oha.url_regex(test, BASE) == (
        f"{BASE}/{endpoint}/\\?param1=[a-zA-Z0-9]{{4,12}}&param2=[a-zA-Z0-9]{{4,12}}"
        f"&param3=[a-zA-Z0-9]{{4,12}}")
    lua = (ROOT / "wrk_scripts" / "requests.lua").read_text()
    assert f"R.{endpoint}(c) return params(c, \"/{endpoint}/\")" in lua
    assert "random_alnum(4, 12)" in lua and '"?param1="' in lua


def test_base_url_regex_metacharacters_are_literal_but_dots_are_left_to_oha():
    # oha escapes every "." of the pattern itself; escaping it here would give "\\."
    assert oha.url_regex("plain", "http://a.b:1/x+y").startswith("http://a.b:1/x\\+y/plain/")


def _branches(regex: str) -> list[str]:
    """Top-level alternatives of "(?:a|b|(?:c|d)/)"."""
    assert regex.startswith("(?:") and regex.endswith(")")
    body, depth, start, out = regex[3:-1], 0, 0, []
    for i, c in enumerate(body):
        depth += c == "("
        depth -= c == ")"
        if c == "|" and depth == 0:
            out.append(body[start:i])
            start = i + 1
    return out + [body[start:]]


def _language(branch: str) -> list[str]:
    """Every string a branch generates, each with the same probability under rand_regex
    (a [0-9] class is uniform; an alternation picks each alternative equally)."""
    block = re.fullmatch(r"([1-9][0-9]*)\[0-9\]\{2\}/", branch)
    if block:
        return [f"{block.group(1)}{k:02d}/" for k in range(100)]
    rest = re.fullmatch(r"\(\?:([0-9|]+)\)/", branch)
    assert rest, f"unexpected branch {branch!r}"
    alternatives = rest.group(1).split("|")
    assert all(len(a) > 1 for a in alternatives[9:]) and "10000" in alternatives
    return [a + "/" for a in alternatives]


def test_id_regex_is_exactly_uniform_over_the_table():
    """rand_regex picks a top-level alternative with probability 1/len; each generates its
    strings uniformly; so P(id) = sum over branches of 1/len * 1/|branch| if it holds id."""
    branches = _branches(oha.id_regex())
    probability: dict[str, float] = {}
    for branch in branches:
        language = _language(branch)
        assert len(set(language)) == len(language) == 100   # equal sizes: no id favoured
        for s in language:
            probability[s] = probability.get(s, 0.0) + 1 / len(branches) / len(language)
    assert sorted(probability) == sorted(f"{i}/" for i in range(1, 10_001))
    assert max(probability.values()) == pytest.approx(1e-4)
    assert min(probability.values()) == pytest.approx(1e-4)
    # no alternative is a bare alternation (rand_regex would flatten it into its parent)
    assert not any(b.startswith("(?:") and b.endswith(")") for b in branches)


def test_get_user_url_is_the_lua_path():
    assert oha.url_regex("get user", BASE + "/") == f"{BASE}/user/{oha.id_regex()}"
    assert '"/user/" .. math.random(1, 10000) .. "/"' in (ROOT / "wrk_scripts" / "requests.lua").read_text()


# --------------------------------------------------------------------------- bodies

def test_update_bodies_are_valid_deterministic_contract_bodies():
    bodies = oha.update_bodies(7, 500)
    assert bodies == oha.update_bodies(7, 500) and bodies != oha.update_bodies(8, 500)
    assert len(set(bodies)) == 500
    for line in bodies:
        assert "\n" not in line    # oha -Z sends one line per request
        body = json.loads(line)
        assert set(body) == {"username", "email"}
        assert re.fullmatch(r"[a-zA-Z0-9]{8,16}", body["username"])
        assert re.fullmatch(r"[a-zA-Z0-9]{8,16}@example\.com", body["email"])
    # the shape update_user.lua writes: {"username": "...", "email": "..."}
    assert bodies[0].startswith('{"username": "') and '", "email": "' in bodies[0]


# --------------------------------------------------------------------------- errors

@pytest.mark.parametrize("text,kind", [
    ("Connection refused (os error 111)", "connect"),
    ("Cannot assign requested address (os error 99)", "connect"),
    ("Too many open files (os error 24)", "connect"),
    ("connection closed before message completed", "read"),
    ("Connection reset by peer (os error 104)", "read"),
    ("connection error", "read"),
    ("invalid HTTP version parsed", "read"),
    ("Broken pipe (os error 32)", "write"),
    ("error writing a body to connection", "write"),
    ("timeout", "timeout"),
    ("aborted due to deadline", "deadline"),
    ("Request generation error: something new", "lost"),
    ("", "lost"),
])
def test_error_texts_map_to_the_closest_wrk_kind(text, kind):
    assert oha.classify_error(text) == kind


# --------------------------------------------------------------------------- parsing

def _keys(value):
    if isinstance(value, dict):
        return {k: _keys(v) for k, v in value.items()}
    return None


def test_summary_has_exactly_wrks_keys_plus_rate():
    wrk = parse_wrk_output((WRK_DATA / "wrk_to_json_200_stdout.txt").read_text(),
                           connections=16)
    summary = parsed("plain_clean")
    # the histogram comes from oha's dump, after the report is parsed (oha_dump)
    histogram_keys = {"rate", "latency_histogram", "latency_histogram_error"}
    assert _keys({k: v for k, v in summary.items() if k not in histogram_keys}) == \
        _keys({k: v for k, v in wrk.items() if k not in histogram_keys})
    assert set(summary["rate"]) == {"asked", "achieved", "not_sent", "late"}


def test_closed_loop_summary_has_exactly_wrks_keys_and_no_rate():
    wrk = parse_wrk_output((WRK_DATA / "wrk_to_json_200_stdout.txt").read_text(),
                           connections=16)
    summary = parsed("plain_closed_loop")
    histogram_keys = {"latency_histogram", "latency_histogram_error"}
    assert "rate" not in summary
    assert _keys({k: v for k, v in summary.items() if k not in histogram_keys}) == \
        _keys({k: v for k, v in wrk.items() if k not in histogram_keys})


def _assert_latency_ordered(latency: dict) -> None:
    order = [latency[k] for k in ("min", "p50", "p75", "p90", "p99", "p99_9", "max")]
    assert all(v is not None and v > 0 for v in order)
    assert order == sorted(order)
    assert latency["min"] <= latency["mean"] <= latency["max"]


def test_clean_run():
    s = parsed("plain_clean")
    assert s["requests"] == s["sent"] == 400 and s["unanswered"] == 0
    assert s["errors"] == {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0,
                           "lost": 0, "total": 0}
    assert s["duration_s"] == pytest.approx(2.0, abs=0.05)
    assert s["requests_per_sec"] == pytest.approx(200, rel=0.02)
    assert s["rate"] == {"asked": 200.0, "achieved": 200.0, "not_sent": 0, "late": None}
    assert s["bytes"] > 0
    assert s["latency_ms"]["stdev"] is None          # oha's JSON has none
    _assert_latency_ordered(s["latency_ms"])
    raw = json.loads(fixture("plain_clean")[0])
    # seconds -> milliseconds, percentiles as oha computed them
    assert s["latency_ms"]["p99"] == pytest.approx(raw["latencyPercentiles"]["p99"] * 1000)
    assert s["latency_ms"]["p99_9"] == pytest.approx(raw["latencyPercentiles"]["p99.9"] * 1000)
    assert s["latency_ms"]["max"] == pytest.approx(raw["summary"]["slowest"] * 1000)
    assert oha.reached(s) == (True, "asked 200 req/s, oha sent 200 req/s (within 5%)")


def test_closed_loop_run_against_nginx():
    """oha's real closed loop (no -q): every connection busy all the window, so far more
    requests than any rate the open-model fixtures asked, none lost, in wrk's units."""
    s = parsed("plain_closed_loop")
    raw = json.loads(fixture("plain_closed_loop")[0])
    assert s["requests"] == s["sent"] == raw["statusCodeDistribution"]["200"] > 1000
    assert s["unanswered"] == 0 and s["errors"]["total"] == 0
    assert s["duration_s"] == raw["summary"]["total"] == pytest.approx(2.0, abs=0.1)
    assert s["requests_per_sec"] == pytest.approx(s["requests"] / s["duration_s"])
    assert s["requests_per_sec"] == pytest.approx(raw["summary"]["requestsPerSec"])
    assert s["bytes"] == raw["summary"]["totalData"] > 0
    assert s["latency_ms"]["stdev"] is None
    _assert_latency_ordered(s["latency_ms"])
    assert s["latency_ms"]["p50"] == pytest.approx(raw["latencyPercentiles"]["p50"] * 1000)
    with pytest.raises(ValueError, match="no rate"):
        oha.reached(s)


def test_closed_loop_latency_is_the_servers_answer_time():
    """Against a server that answers after ~50 ms (10 ms + Nagle against delayed ACKs),
    4 connections of a closed loop send about 4 / 50 ms = 80 requests a second: each
    latency is one answer's time, never a wait for a due time."""
    s = parsed("plain_closed_loop_slow")
    assert s["errors"]["total"] == 0 and s["requests"] == s["sent"]
    assert 10 <= s["latency_ms"]["p50"] <= s["latency_ms"]["max"] < 200
    per_connection = s["duration_s"] / (s["requests"] / 4)
    assert per_connection == pytest.approx(s["latency_ms"]["mean"] / 1000, rel=0.1)


def test_closed_loop_against_a_closed_port_is_only_connect_errors():
    s = parsed("plain_closed_loop_closed_port")
    assert s["requests"] == s["sent"] == s["unanswered"] == 0 and s["requests_per_sec"] == 0
    assert s["errors"]["connect"] == s["errors"]["total"] > 0
    assert all(v is None for v in s["latency_ms"].values())
    assert "rate" not in s


def test_closed_loop_dump_gives_the_histogram_without_due_times():
    """oha's real closed-loop dump: start_latency_correction NULL on every row, so the
    histogram is of the latency from the send, nothing is late, and the summary gets no
    uncorrected percentiles (there is nothing to correct)."""
    from bench.core import histogram
    from bench.load import oha_dump
    dump = oha_dump.read_dump(FIXTURES / "plain_closed_loop_slow.db")
    assert dump["late"] is None
    s = parsed("plain_closed_loop_slow")
    oha_dump.add_distribution(s, dump)
    assert "latency_uncorrected_ms" not in s and "rate" not in s
    assert "latency_histogram_error" not in s
    hist = histogram.from_record(s["latency_histogram"])
    assert hist.get_total_count() == s["requests"] == dump["rows"]
    max_us = json.loads(fixture("plain_closed_loop_slow")[0])["summary"]["slowest"] * 1e6
    assert abs(hist.get_max_value() - max_us) <= histogram.resolution_us(max_us)


def test_connection_close_run_is_clean():
    s = parsed("to_json_connection_close")
    assert "--disable-keepalive" in fixture("to_json_connection_close")[1]["command"]
    assert s["requests"] == s["sent"] == 600 and s["errors"]["total"] == 0
    assert oha.reached(s)[0]


@pytest.mark.parametrize("name,code", [("plain_wrong_token", "401"),
                                       ("get_user_no_database", "404")])
def test_non_2xx_answers_are_status_errors(name, code):
    s = parsed(name)
    assert json.loads(fixture(name)[0])["statusCodeDistribution"] == {code: 400}
    assert s["requests"] == s["sent"] == 400
    assert s["errors"]["status"] == s["errors"]["total"] == 400
    _assert_latency_ordered(s["latency_ms"])          # answers, timed like any other
    assert oha.reached(s)[0]                          # the rate was sent, just refused


def test_unreachable_rate_is_reported_not_reached():
    s = parsed("plain_unreachable_rate")
    assert s["errors"]["total"] == 0
    assert s["rate"]["asked"] == 1_000_000
    assert s["rate"]["achieved"] == s["sent"] / 2.0 < 200_000
    assert s["rate"]["not_sent"] == 2_000_000 - s["sent"]
    ok, why = oha.reached(s)
    assert not ok
    assert why.startswith(f"asked 1,000,000 req/s, oha sent {s['rate']['achieved']:,.0f} req/s")
    assert "never sent" in why and "connections" in why
    # the latency of due requests that waited for a connection is counted (open model)
    assert s["latency_ms"]["p50"] > 100


def test_closed_port_sends_nothing():
    s = parsed("plain_closed_port")
    assert s["requests"] == s["sent"] == s["unanswered"] == 0
    assert s["errors"]["connect"] == s["errors"]["total"] == 400
    assert s["rate"]["achieved"] == 0 and s["rate"]["not_sent"] == 400
    assert all(v is None for v in s["latency_ms"].values())
    assert s["requests_per_sec"] == 0
    ok, why = oha.reached(s)
    assert not ok and "400 connection attempts failed" in why
    assert "every connection was busy" not in why


def test_connections_closed_unanswered_are_read_errors():
    s = parsed("plain_dropped")
    assert s["errors"]["read"] == s["errors"]["total"] == 11
    assert s["sent"] == s["requests"] + 11 == 600
    assert s["unanswered"] == 11


def test_timeouts_are_unanswered_requests():
    s = parsed("plain_timeouts")
    assert s["requests"] == 0
    assert s["errors"]["timeout"] == s["errors"]["total"] == s["unanswered"] == s["sent"] == 28
    assert not oha.reached(s)[0]     # 4 connections x 1 request per 0.3 s < 20 req/s


def test_deadline_aborts_are_forgiven_up_to_one_per_connection():
    """Without -w oha reports every connection task it aborts at the deadline, idle or
    not: 3 here while all 400 due requests were answered."""
    text, meta = fixture("plain_without_wait")
    assert "-w" not in meta["command"]
    assert json.loads(text)["errorDistribution"] == {"aborted due to deadline": 3}
    s = parsed("plain_without_wait")
    assert s["errors"]["total"] == 0 and s["sent"] == s["requests"] == 400
    more_than_connections = parsed("plain_without_wait", connections=2)
    assert more_than_connections["errors"]["lost"] == 1
    assert more_than_connections["errors"]["total"] == 1


def _edited(name: str, **changes) -> str:
    data = json.loads(fixture(name)[0])
    for key, value in changes.items():
        data[key] = value
    return json.dumps(data)


def test_an_unknown_error_text_is_counted_as_lost_never_dropped():
    text = _edited("plain_clean", errorDistribution={"something oha 1.17 invents": 5,
                                                     "Connection refused (os error 111)": 2})
    s = oha.parse_oha_json(text, asked_rate=200, duration_s=2, connections=16)
    assert s["errors"]["lost"] == 5 and s["errors"]["connect"] == 2
    assert s["errors"]["total"] == 7
    assert s["sent"] == 405 and s["unanswered"] == 5


def test_3xx_counts_as_a_status_error():
    text = _edited("plain_clean", statusCodeDistribution={"200": 390, "302": 10})
    s = oha.parse_oha_json(text, asked_rate=200, duration_s=2, connections=16)
    assert s["errors"]["status"] == 10 and s["requests"] == 400


@pytest.mark.parametrize("text", ["", "Error: connection refused", "[1, 2]", "{\"summary\": {}}"])
def test_no_report_is_a_load_error(text):
    with pytest.raises(LoadError):
        oha.parse_oha_json(text, asked_rate=10, duration_s=1, connections=1)


def test_a_non_count_is_a_load_error():
    text = _edited("plain_clean", statusCodeDistribution={"200": "many"})
    with pytest.raises(LoadError, match="not a count"):
        oha.parse_oha_json(text, asked_rate=200, duration_s=2, connections=16)


# --------------------------------------------------------------------------- reached

def _summary(asked: float, achieved: float, not_sent: int = 0) -> dict:
    return {"sent": int(achieved), "errors": {"connect": 0},
            "rate": {"asked": asked, "achieved": achieved, "not_sent": not_sent, "late": None}}


def test_reached_boundary_and_message():
    assert oha.reached(_summary(20_000, 19_000))[0]
    assert oha.reached(_summary(20_000, 19_800), tolerance=0.01)[0]
    ok, why = oha.reached(_summary(20_000, 12_345, 38_000))
    assert not ok
    assert why.startswith("asked 20,000 req/s, oha sent 12,345 req/s (62%, below 19,000)")
    assert "38,000 due requests were never sent" in why
    with pytest.raises(ValueError):
        oha.reached(_summary(1, 1), tolerance=1)


# --------------------------------------------------------------------------- binary / run

class _Host:
    """A host whose tools and processes the test decides (oha itself is not run here)."""

    def __init__(self, which=None, completed=None):
        self._which, self._completed, self.argv = which, completed, None

    def which(self, tool):
        return self._which

    def run(self, argv, *, timeout, on_start=None, **kwargs):
        self.argv, self.timeout = argv, timeout
        return self._completed


def test_missing_oha_says_how_to_install():
    with pytest.raises(LoadError) as err:
        oha.require_oha(_Host(which=None))
    assert "make setup" in str(err.value) and "scripts/install_oha.sh" in str(err.value)
    assert "1.16.0" in str(err.value)


def test_run_oha_killed_after_its_wall_budget_is_a_load_error():
    host = _Host("/bin/oha", Completed([], -9, "", "", 0.1, 40.0, timed_out=True))
    with pytest.raises(LoadError, match="killed"):
        oha.run_oha("plain", BASE, OhaSettings(4, 10, 2.0, timeout_s=1.0), host=host)
    assert host.timeout == 2.0 + 1.0 + oha.KILL_GRACE_S
    assert host.argv[0] == "/bin/oha"


def test_run_oha_failure_is_a_load_error():
    host = _Host("/bin/oha", Completed([], 2, "", "error: unexpected argument", 0.0, 0.1))
    with pytest.raises(LoadError, match="status 2"):
        oha.run_oha("plain", BASE, OhaSettings(4, 10, 2.0), host=host)


def test_run_oha_closed_loop_runs_no_rate_and_parses_the_report():
    text, meta = fixture("plain_closed_loop")
    host = _Host("/bin/oha", Completed([], 0, text, "", 0.5, 2.1))
    result = oha.run_oha("plain", BASE, OhaSettings(16, None, 2.0, worker_threads=1),
                         host=host)
    assert "-q" not in host.argv and "--latency-correction" not in host.argv
    assert host.argv[-2] == "--db-url"
    result.summary.pop("latency_histogram"), result.summary.pop("latency_histogram_error")
    assert result.summary == parsed("plain_closed_loop")
    assert result.threads == 1 and result.connections == 16


def test_run_oha_writes_the_bodies_for_update_user_and_parses_the_report():
    text, _ = fixture("plain_clean")
    seen = {}

    class Reading(_Host):
        def run(self, argv, **kwargs):
            bodies = Path(argv[argv.index("-Z") + 1])
            seen["lines"] = bodies.read_text().splitlines()
            return super().run(argv, **kwargs)

    host = Reading("/bin/oha", Completed([], 0, text, "", 0.25, 2.0))
    result = oha.run_oha("update user", BASE, OhaSettings(16, 200, 2.0, seed=3), host=host)
    assert seen["lines"] == oha.update_bodies(3)
    # this fake oha writes no --db-url dump: no histogram, and the sample keeps the rest
    assert result.summary.pop("latency_histogram") is None
    assert result.summary.pop("latency_histogram_error").startswith("oha wrote no dump at ")
    assert result.summary == parsed("plain_clean")
    assert result.client_cpu_s == 0.25 and result.connections == 16
    assert result.raw == json.loads(text)


def test_over_https_oha_speaks_http_1_1_only_and_verifies_with_the_runs_ca():
    tls = oha.oha_command("plain", "https://127.0.0.1:18180",
                          OhaSettings(4, None, 1.0, ca_file="/run/tls/ca.pem"))
    assert tls[tls.index("--http-version") + 1] == "1.1"
    assert tls[tls.index("--cacert") + 1] == "/run/tls/ca.pem"
    plain = oha.oha_command("plain", BASE, OhaSettings(4, None, 1.0, ca_file="/run/tls/ca.pem"))
    assert "--cacert" not in plain and "--http-version" not in plain
