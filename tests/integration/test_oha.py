"""Real oha 1.16 against a real server (actix-web, database none), at a fixed rate.

Runs servers and puts load on them: run under the shared lock,
    flock /tmp/webbench-load.lock .venv/bin/python -m pytest tests/integration/test_oha.py
Needs oha on PATH (`make setup` / scripts/install_oha.sh): without it the tests fail with
the install hint instead of skipping. About 15 s.
"""
from __future__ import annotations

import collections
import re

import pytest

from bench.analysis import judge
from bench.setup.install import install
from bench.core import histogram, manifest
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra.host import LOCAL
from bench.infra.lifecycle import running_server
from bench.infra.server import build, log_tail
from bench.load import oha
from bench.load.oha import OhaSettings
from tests.conftest import TEST_SERVER_PORT

# `make test-all` only: every load generator besides wrk
pytestmark = [pytest.mark.integration, pytest.mark.full]
SETTINGS = Settings(workers=2, db_connections=4, port=TEST_SERVER_PORT)


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    """actix-web with no database: plain and to json need none."""
    failure = install("oha")   # built on first use, as a run does (bench.setup.install)
    assert failure is None, failure
    oha.require_oha()     # a missing oha fails here, with the install hint
    spec = manifest.discover()["actix-web"]
    logs = tmp_path_factory.mktemp("oha")
    build(spec, SETTINGS, logs / "build.log")
    with running_server(Variant(spec, "none", False), SETTINGS, None,
                        logs / "server.log") as running:
        yield running.server.base_url
        assert running.server.alive(), log_tail(logs / "server.log")


def test_installed_oha_is_the_pinned_version():
    assert oha.oha_version() == f"oha {oha.OHA_VERSION}"


@pytest.mark.measure      # whether oha kept the rate: alone, in the serial phase
def test_a_low_fixed_rate_is_sent_and_answered(server_url):
    """The bound is the harness's own: a point within RATE_TOLERANCE of its rate is a
    measurement at that rate (judge.rate_problem, oha.reached)."""
    result = oha.run_oha("plain", server_url, OhaSettings(connections=16, rate=200,
                                                          duration_s=2.0))
    s, rate = result.summary, result.summary["rate"]
    assert result.exit_code == 0
    ok, why = oha.reached(s)
    assert ok and judge.rate_problem(s) is None, why
    assert rate["achieved"] == pytest.approx(200, rel=judge.RATE_TOLERANCE)
    # requests_per_sec divides by oha's total, which also holds the wait for the last
    # answers: paced, it stays at the rate at most
    assert s["requests_per_sec"] == pytest.approx(s["requests"] / s["duration_s"])
    assert s["requests_per_sec"] <= 200 * (1 + judge.RATE_TOLERANCE)
    due = 400                                       # 200 req/s for 2 s
    assert rate["not_sent"] <= judge.RATE_TOLERANCE * due, rate
    assert s["requests"] + rate["not_sent"] >= due, (s["requests"], rate)
    assert (1 - judge.RATE_TOLERANCE) * due <= s["requests"] == s["sent"] <= due + 1
    assert s["errors"]["total"] == 0, s["errors"]
    latency = s["latency_ms"]
    order = [latency[k] for k in ("min", "p50", "p75", "p90", "p99", "p99_9", "max")]
    assert all(v is not None and v > 0 for v in order), latency
    assert order == sorted(order)
    assert latency["p50"] < 50            # an idle actix answers /plain/ in well under 1 ms
    assert result.client_cpu_s > 0 and result.wall_s >= 2.0
    # the whole distribution from oha's --db-url dump: every response, and the p99 oha
    # itself reports (its floor(p/100 * n)-th latency, 0-based) to the histogram's precision
    assert "latency_histogram_error" not in s
    hist = histogram.from_record(s["latency_histogram"])
    assert hist.get_total_count() == s["requests"]
    theirs_us = result.raw["latencyPercentiles"]["p99"] * 1e6
    rank = int(0.99 * s["requests"]) + 1
    ours_us = hist.get_value_at_percentile(100.0 * rank / s["requests"])
    assert abs(ours_us - theirs_us) < histogram.resolution_us(theirs_us), (ours_us, theirs_us)
    assert isinstance(s["rate"]["late"], int)
    assert s["latency_uncorrected_ms"]["p50"] <= latency["p50"] * 1.01


def test_update_user_sends_the_bodies_file(server_url):
    """With no database every PATCH is a 404: each answer is a status error, and every
    request went out (oha read the -Z file and sent PATCH bodies)."""
    s = oha.run_oha("update user", server_url, OhaSettings(4, 100, 1.0)).summary
    # whether the rate was kept is the low-rate test's (run alone): here every due request
    # was either answered or counted as not sent, and at most the 100 due went out
    assert 50 < s["requests"] <= 101
    assert s["requests"] + s["rate"]["not_sent"] >= 99, (s["requests"], s["rate"])
    assert s["errors"]["status"] == s["errors"]["total"] == s["requests"]


def test_an_absurd_rate_is_reported_as_not_reached(server_url):
    s = oha.run_oha("plain", server_url, OhaSettings(4, 1_000_000, 1.0)).summary
    ok, why = oha.reached(s)
    assert not ok
    assert why.startswith("asked 1,000,000 req/s, oha sent ")
    assert s["rate"]["not_sent"] > 500_000
    assert s["errors"]["total"] == 0     # nothing failed: it was only never sent


def test_the_id_regex_is_uniform_as_oha_draws_it():
    """oha's own generator (rand_regex), 300,000 draws: every id 1..10000 (each expected
    30 times; P(one is missing) ~ 1e-9), nothing else, chi-square near its 9999 degrees
    of freedom (sd 141)."""
    url = oha.url_regex("get user", "http://127.0.0.1:1")
    done = LOCAL.run([oha.require_oha(), "--rand-regex-url", "--dump-urls", "300000", url],
                     timeout=60)
    assert done.returncode == 0, done.stderr
    ids = [int(m) for m in re.findall(r"^http://127\.0\.0\.1:1/user/([0-9]+)/$",
                                      done.stdout, re.M)]
    assert len(ids) == 300_000
    counts = collections.Counter(ids)
    assert set(counts) == set(range(1, 10_001))
    chi2 = sum((n - 30) ** 2 / 30 for n in counts.values())
    assert 9999 - 6 * 141 < chi2 < 9999 + 6 * 141


def test_param_urls_are_what_the_wrk_scripts_send():
    url = oha.url_regex("to json", "http://127.0.0.1:1")
    done = LOCAL.run([oha.require_oha(), "--rand-regex-url", "--dump-urls", "2000", url],
                     timeout=30)
    lines = done.stdout.split()
    assert len(lines) == 2000
    pattern = re.compile(r"http://127\.0\.0\.1:1/to_json/\?param1=([a-zA-Z0-9]{4,12})"
                         r"&param2=[a-zA-Z0-9]{4,12}&param3=[a-zA-Z0-9]{4,12}")
    assert all(pattern.fullmatch(line) for line in lines)
    assert {len(pattern.fullmatch(line).group(1)) for line in lines} == set(range(4, 13))
