"""The websocket test (#52) against real servers: each planted WebSocket defect of the
fixture server (tests/fixtures/http_defects/ws_side.py) is caught by exactly the check
meant for it, its correct twin passes every check directly and through the nginx and
HAProxy proxies, and real wsload (built from tools/wsload) echoes, checks and times every
message."""
from __future__ import annotations

import pytest

from bench.core.manifest import discover
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra.proxy import available_proxies
from bench.load import LoadRequest, generator
from bench.verify import verified_server
from tests.integration.test_verify import PORTS, ROOT, TOKEN

pytestmark = pytest.mark.integration

FIXTURES = discover([ROOT / "tests" / "fixtures" / "servers"])
CHECKS = {"websocket handshake", "websocket without token", "websocket echo",
          "websocket fragmented message", "websocket ping", "websocket invalid utf-8",
          "websocket unmasked frame", "websocket close"}
# fixture -> the checks it must fail, and only those (the correct twin: none)
PLANTED = {"http_workloads": set(),
           "broken_ws_wrong_accept": {"websocket handshake"},
           "broken_ws_echo_changes": {"websocket echo"},
           "broken_ws_utf8_accepted": {"websocket invalid utf-8"},
           "broken_ws_unmasked_accepted": {"websocket unmasked frame"},
           "broken_ws_no_pong": {"websocket ping"}}


@pytest.mark.parametrize("server_id", sorted(PLANTED))
def test_each_planted_websocket_defect_fails_exactly_its_check(server_id, tmp_path):
    with verified_server(Variant(FIXTURES[server_id], "none", False),
                         Settings(port=next(PORTS), workers=1), None, tmp_path / "server.log",
                         token=TOKEN, suite=False, tests=("websocket",)) as running:
        report = running.verification
    assert CHECKS <= {c.name for c in report.checks}
    assert {c.name for c in report.failures} == PLANTED[server_id], report.summary_text()
    detail = {c.name: c.detail for c in report.checks}
    if server_id == "broken_ws_wrong_accept":
        assert "Sec-WebSocket-Accept" in detail["websocket handshake"]
    elif server_id == "broken_ws_echo_changes":
        assert "the echo differs (32 bytes, first difference at byte 31)" in \
            detail["websocket echo"]
    elif server_id == "broken_ws_utf8_accepted":
        assert "not a close frame (1007)" in detail["websocket invalid utf-8"]
    elif server_id == "broken_ws_unmasked_accepted":
        assert "not a close frame (1002)" in detail["websocket unmasked frame"]
    elif server_id == "broken_ws_no_pong":
        assert "no frame within" in detail["websocket ping"]


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_websocket_is_verified_through_each_proxy_in_front(tmp_path):
    port = next(PORTS)
    next(PORTS)                                 # port + 1: where the proxy listens
    proxies = {name: available_proxies()[name] for name in ("nginx", "haproxy")}
    with verified_server(Variant(FIXTURES["http_workloads"], "none", False),
                         Settings(port=port, workers=1), None, tmp_path / "server.log",
                         token=TOKEN, suite=False, tests=("websocket",),
                         proxies=proxies) as running:
        report = running.verification
    through = {c.name: c for c in report.checks if c.name.startswith("websocket through")}
    assert set(through) == {"websocket through nginx", "websocket through haproxy"}
    assert all(c.passed for c in through.values()), report.summary_text()


def measure(server_id: str, tmp_path, size: str, connections: int = 4):
    with verified_server(Variant(FIXTURES[server_id], "none", False),
                         Settings(port=next(PORTS), workers=1), None, tmp_path / "server.log",
                         token=TOKEN, suite=False) as running:
        request = LoadRequest(test="websocket", base_url=running.server.base_url,
                              connections=connections, threads=1, duration_s=1, timeout_s=5,
                              seed=1, token=TOKEN, size=size)
        wsload = generator("wsload")
        return wsload.run(request), wsload.describe(request, None)


def test_wsload_echoes_checks_and_times_every_message(tmp_path):
    result, described = measure("http_workloads", tmp_path, "32b")
    summary = result.summary
    assert summary["errors"]["total"] == 0, summary
    assert summary["requests"] > 4, summary
    # one message in flight per connection: at most one per connection unanswered
    assert 0 <= summary["sent"] - summary["requests"] <= 4, summary
    assert summary["latency_histogram"]["count"] == summary["requests"]
    assert summary["bytes"] == summary["requests"] * (32 + 2)     # payload + frame header
    assert summary["latency_ms"]["p50"] > 0
    assert described == {"message_bytes": 32}
    assert "-size" in result.command and "32" in result.command
    assert result.client_cpu_s > 0


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_wsload_counts_an_echo_that_is_not_the_message_as_an_error(tmp_path):
    result, _ = measure("broken_ws_echo_changes", tmp_path, "4k", connections=2)
    summary = result.summary
    assert summary["requests"] > 0
    assert summary["errors"]["status"] == summary["requests"], summary
    assert summary["bytes"] == summary["requests"] * (4096 + 4)
