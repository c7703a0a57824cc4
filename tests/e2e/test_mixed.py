"""The mixed test end to end: gin on PostgreSQL under the default profile's weighted mix
(mixes/small-api.toml), verified by the database's statement counts for a drawn burst,
each sample's counts per endpoint held against the weights, and the tables' section per
endpoint; with k6 beside wrk (make test-all), each endpoint's own percentiles. Real
server, database, wrk and k6."""
from __future__ import annotations

import pytest

from bench.core import mix
from bench.storage import results
from tests.e2e.test_run_bench import PORTS, only_run, run_bench

# make test-all: the everyday tier runs these lines through the unit tests (tests/unit/
# test_mix.py: the profile, the judgement, the table) and the integration tests (the
# streams: test_wrk_mixed.py; the counted burst: test_verify_mix.py) (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.full]
SHORT = ["--repeat", "1", "--duration", "2", "--warmup", "0"]
PROFILE = mix.load(mix.DEFAULT_PROFILE)


def mixed_run(tmp_path, *generators: str) -> dict:
    out = run_bench("--servers", "gin", "--tests", "mixed", "--databases", "postgres",
                    "--orm", "raw", "--generator", ",".join(generators), *SHORT,
                    "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-3000:]
    doc = only_run(tmp_path)
    assert doc["settings"]["mix_profile"] == PROFILE.public()
    check = next(c for c in doc["verification"]["gin/postgres/raw"]["checks"]
                 if c["name"] == "queries per mixed request")
    assert check["passed"], check
    assert sum(doc["verification"]["gin/postgres/raw"]["queries"]["mixed"]["drawn"].values()) == 100
    return doc


def sample_of(doc: dict, generator: str) -> dict:
    (case,) = [c for c in doc["cases"] if c["key"]["generator"] == generator]
    assert case["status"] == results.OK and case["key"]["mix"] == PROFILE.identity, case
    return case["samples"][0]


def test_a_mixed_run_sends_the_mix_and_shows_each_endpoint(tmp_path):
    doc = mixed_run(tmp_path, "wrk")
    sample = sample_of(doc, "wrk")
    sent = {key: e["sent"] for key, e in sample["summary"]["endpoints"].items()}
    assert set(sent) == set(PROFILE.shares()) and mix.share_problem(PROFILE, sent) is None
    assert sum(sent.values()) >= sample["summary"]["requests"] > 500
    md = (results.latest_run(tmp_path) / "tables.md").read_text()
    assert "## mixed: each endpoint" in md and "| queries n=5 " in md


def test_k6_times_each_endpoint_of_the_mix(tmp_path):
    doc = mixed_run(tmp_path, "wrk", "k6")
    endpoints = sample_of(doc, "k6")["summary"]["endpoints"]
    for key, figures in endpoints.items():
        latency = figures["latency_ms"]
        assert figures["sent"] > 0 and 0 < latency["p50"] <= latency["p99"], (key, figures)
    assert all(e.get("latency_ms") is None for e in sample_of(doc, "wrk")["summary"]["endpoints"].values())
    md = (results.latest_run(tmp_path) / "tables.md").read_text()
    rows = [line for line in md.splitlines() if line.startswith("| gin ") and "| k6 " in line]
    assert len(rows) == len(PROFILE.endpoints) and not any("| - " in row for row in rows), rows
