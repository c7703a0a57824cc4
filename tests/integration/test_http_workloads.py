"""The HTTP workloads (#51) against real servers: each planted defect of the fixture
server (tests/fixtures/http_defects) is caught by exactly the check meant for it, its
correct twin passes every check, and real wrk drives the pipelined test, counting every
request of every batch."""
from __future__ import annotations

import pytest

from bench.core.manifest import discover
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.load import LoadRequest, for_request
from bench.verify import verified_server
from tests.integration.test_verify import PORTS, ROOT, TOKEN

pytestmark = pytest.mark.integration

FIXTURES = discover([ROOT / "tests" / "fixtures" / "servers"])
# fixture -> the checks it must fail, and only those (the correct twin: none)
PLANTED = {"http_workloads": set(), "broken_pipelining_order": {"pipelined"},
           "broken_static_climbs_out": {"static path out of the folder"},
           "broken_upload_wrong_checksum": {"upload"},
           "broken_compression_lies": {"compression"}}


@pytest.mark.parametrize("server_id", sorted(PLANTED))
def test_each_planted_defect_fails_exactly_its_check(server_id, tmp_path):
    with verified_server(Variant(FIXTURES[server_id], "none", False),
                         Settings(port=next(PORTS), workers=1), None, tmp_path / "server.log",
                         token=TOKEN, suite=False, pipeline=16,
                         tests=("static", "upload", "delay"),
                         compression=("gzip", "br")) as running:
        report = running.verification
    failed = {c.name for c in report.failures}
    assert failed == PLANTED[server_id], report.summary_text()
    names = {c.name for c in report.checks}
    assert {"pipelined", "static", "compression", "static missing file", "static path out of the folder",
            "upload", "upload without token", "upload over the limit", "delay"} <= names
    detail = {c.name: c.detail for c in report.checks}
    if server_id == "broken_pipelining_order":
        assert "out of order" in detail["pipelined"]
    elif server_id == "broken_static_climbs_out":
        assert "GET /static/../outside.txt: status 200 with a file outside the folder" in \
            detail["static path out of the folder"]
    elif server_id == "broken_compression_lies":
        assert "says Content-Encoding gzip but its 65,536 bytes do not decode" in \
            detail["compression"]
    elif server_id == "broken_upload_wrong_checksum":
        assert "POST /upload/ with 65,536 bytes: answered" in detail["upload"]
    else:
        assert "16 GET /plain/ requests in one write" in detail["pipelined"]


def test_wrk_pipelines_and_counts_every_request_of_every_batch(tmp_path):
    port = next(PORTS)
    with verified_server(Variant(FIXTURES["http_workloads"], "none", False),
                         Settings(port=port, workers=1), None, tmp_path / "server.log",
                         token=TOKEN, suite=False) as running:
        request = LoadRequest(test="pipelined", base_url=running.server.base_url,
                              connections=4, threads=1, duration_s=1, timeout_s=5, seed=1,
                              token=TOKEN, pipeline=16)
        generator = for_request(request)
        result = generator.run(request)
    summary = result.summary
    assert "pipeline=16" in result.command
    assert summary["errors"]["total"] == 0, summary
    assert summary["requests"] > 16 * 4, summary
    # every request of a batch counted as sent, the unsent check batch left out: at the
    # stop, at most one batch per connection is still unanswered
    assert 0 <= summary["sent"] - summary["requests"] <= 4 * 16, summary
    assert generator.describe(request, result) == {"pipeline": 16}
