"""Real wrk running the mixed test (wrk_scripts/mixed.lua) against a server that tells
which endpoint each request was (tests/fixtures/mix_server.py): every request is its drawn
endpoint's as that test's own script builds it, the counts wrk reports per endpoint are
what the server got, they follow the weights, and a seed gives the same stream.

Puts load on the machine: run under the shared lock,
    flock /tmp/webbench-load.lock .venv/bin/python -m pytest tests/integration/test_wrk_mixed.py
About 5 s.
"""
from __future__ import annotations

import pytest

from bench.load import for_request
from bench.load.generator import LoadRequest
from tests.fixtures import mix_server
from tests.fixtures.mix_server import MIX, TOKEN, WEIGHTS

pytestmark = pytest.mark.integration
CONNECTIONS = 4


def request(url: str, seed: int = 3, duration_s: float = 2.0) -> LoadRequest:
    return LoadRequest("mixed", url, connections=CONNECTIONS, threads=2,
                       duration_s=duration_s, timeout_s=5.0, seed=seed, token=TOKEN, mix=MIX)


def test_wrk_draws_each_endpoint_by_its_weight_and_counts_what_it_sent():
    with mix_server.counting_server() as (url, seen):
        result = for_request(request(url), closed_loop="wrk").run(request(url))
    s = result.summary
    assert result.exit_code == 0 and s["errors"]["total"] == 0, (s["errors"],
                                                                 result.stderr_tail)
    sent = {key: e["sent"] for key, e in s["endpoints"].items()}
    # every request the server got was a drawn endpoint's, built as its own script does
    assert set(seen) <= set(WEIGHTS), dict(seen)
    # wrk's counts are what it handed out: what the server answered, plus at most one
    # request in flight per connection at the stop and the one wrk builds to check the
    # script and never sends
    unseen = {key: sent[key] - seen[key] for key in WEIGHTS}
    assert all(n >= 0 for n in unseen.values()) and sum(unseen.values()) <= CONNECTIONS + 1, \
        (sent, dict(seen))
    # ... and what it answered, but for the answers wrk stopped before reading
    assert s["requests"] <= sum(seen.values()) <= s["requests"] + CONNECTIONS
    assert s["requests"] > 1000
    assert mix_server.share_problem(sent) is None


def test_a_seed_gives_the_same_mixed_stream(tmp_path, monkeypatch):
    streams = {}
    with mix_server.counting_server() as (url, _):
        for name, seed in (("first", 5), ("again", 5), ("other", 6)):
            dump = tmp_path / name
            dump.mkdir()
            monkeypatch.setenv("BENCH_WRK_DUMP_DIR", str(dump))
            for_request(request(url, seed, 1.0), closed_loop="wrk").run(request(url, seed, 1.0))
            streams[name] = [(dump / f"thread{i}.txt").read_bytes() for i in (1, 2)]
    assert streams["first"] == streams["again"] and streams["first"] != streams["other"]
    first = streams["first"][0].decode()
    assert first.count("PATCH /user/") > 50 and "Content-Type: application/json" in first
    assert streams["first"][0] != streams["first"][1]         # each thread its own draws
