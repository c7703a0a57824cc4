"""The websocket test on numbers and text alone: its cases (sizes, its own generator),
what a run may combine it with, wsload's command and report (bench.load.wsload), the
client frames verification writes (bench.verify.wsframes) and its table notes."""
from __future__ import annotations

import json

import pytest

from bench.core import workloads
from bench.core.manifest import discover
from bench.core.plan import plan
from bench.core.settings import SelectionError, Settings, validate
from bench.load import LoadError, LoadRequest, wsload
from bench.paths import SERVERS_DIR
from bench.verify import wsframes

SPECS = discover([SERVERS_DIR])


def test_websocket_cases_are_a_case_per_message_size_measured_by_wsload():
    cases = plan(Settings(servers=("gin",), tests=("plain", "websocket"), ceiling=False),
                 SPECS)
    ws = [c for c in cases if c.test == "websocket"]
    assert [c.size for c in ws] == ["32b", "4k"]
    # wrk measures plain, wsload the websocket test, whatever --generator says for HTTP
    assert {c.load.generator for c in ws} == {"wsload"}
    assert next(c for c in cases if c.test == "plain").load.generator == "wrk"
    assert ws[0].id.endswith("/websocket_32b@c64@wsload") and ws[1].title == "websocket 4k"
    # --size serves each sized test the sizes it has: 4k is a message, never a file
    both = plan(Settings(servers=("gin",), tests=("static", "websocket"), sizes=("1k", "4k"),
                         ceiling=False), SPECS)
    assert [(c.test, c.size) for c in both] == [("static", "1k"), ("websocket", "1k"),
                                                ("websocket", "4k")]


def test_what_the_websocket_test_may_be_combined_with():
    ids = list(SPECS)
    for settings, words in (
            (Settings(tests=("websocket",), protocols=("h2", "h2c")), "RFC 8441"),
            (Settings(tests=("websocket",), rates=("1000",)), "closed loop only"),
            (Settings(tests=("websocket",), connection_modes=("close",)),
             "one connection held open"),
            (Settings(tests=("plain",), generators=("wsload",)),
             "--generator wsload sends WebSocket messages only; the plain test is HTTP"),
            (Settings(tests=("static",), sizes=("4k",)),
             "gives the static test no size: it has 1k, 64k, 1m")):
        with pytest.raises(SelectionError, match=words):
            validate(settings, ids)
    validate(Settings(tests=("websocket",), protocols=("h1", "h1-tls")), ids)
    # beside h1, an h2 point measures the HTTP tests only
    mixed = plan(Settings(servers=("gin",), tests=("plain", "websocket"), protocols=("h1", "h2"),
                          sizes=("32b",), ceiling=False), SPECS)
    assert sorted((c.test, c.load.protocol) for c in mixed) == [
        ("plain", "h1"), ("plain", "h2"), ("websocket", "h1")]
    validate(Settings(tests=("websocket", "plain"), generators=("wrk", "oha")), ids)


def request(**kw) -> LoadRequest:
    base = dict(test="websocket", base_url="https://127.0.0.1:9/", connections=8,
                threads=1, duration_s=2.5, timeout_s=5, seed=1, token="T", size="4k",
                ca_file="/tmp/ca.pem")
    return LoadRequest(**{**base, **kw})


def test_wsload_is_asked_for_the_case_as_it_is():
    argv = wsload.command("/bin/wsload", request())
    assert argv == ["/bin/wsload", "-url", "wss://127.0.0.1:9/ws/", "-connections", "8",
                    "-duration", "2.5", "-size", "4096", "-timeout", "5", "-token", "T",
                    "-ca", "/tmp/ca.pem"]
    plain = wsload.command("/bin/wsload", request(base_url="http://h:1", size=None,
                                                  ca_file=None))
    assert plain[2] == "ws://h:1/ws/" and plain[plain.index("-size") + 1] == "32"
    with pytest.raises(LoadError, match="WebSocket messages only, not the plain test"):
        wsload.WSLOAD.run(request(test="plain"))


def test_wsloads_report_becomes_the_normalised_summary():
    out = json.dumps({"sent": 1003, "echoed": 1000, "bytes": 1000 * 4100, "duration_s": 2.0,
                      "errors": {"timeout": 2, "status": 1},
                      "latency_us": [[100, 500], [200, 499], [90_000_000, 1]],
                      "connections": 8, "size": 4096})
    s = wsload.parse_output("a line before\n" + out + "\n")
    assert (s["requests"], s["sent"], s["unanswered"]) == (1000, 1003, 3)
    assert s["requests_per_sec"] == 500.0 and s["bytes"] == 4_100_000
    assert s["errors"] == {"connect": 0, "read": 0, "write": 0, "status": 1, "timeout": 2,
                           "total": 3}
    hist = s["latency_histogram"]
    assert hist["count"] == 1000 and hist["clamped"] == 1     # above the 60 s range
    assert s["latency_ms"]["p50"] == pytest.approx(0.1, rel=0.01)
    assert "latency_histogram_error" not in s
    with pytest.raises(LoadError, match="no readable report"):
        wsload.parse_output("killed\n")
    with pytest.raises(LoadError, match="error kinds it should not have"):
        wsload.parse_output(out.replace('"status"', '"weird"'))


def test_the_wsload_binary_is_named_after_its_sources():
    assert wsload.binary_path().name == f"wsload-{wsload.source_hash()}"
    assert len(wsload.source_hash()) == 12
    assert "gorilla/websocket v1.5.3" in (wsload.SOURCE_DIR / "go.mod").read_text()


def test_client_frames_are_written_as_rfc_6455_says():
    # RFC 6455 §1.3's example key and accept value
    assert wsframes.accept_for("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    unmasked = wsframes.frame_bytes(wsframes.TEXT, b"Hello", mask=False)
    assert unmasked == b"\x81\x05Hello"                    # §5.7's single-frame example
    masked = wsframes.frame_bytes(wsframes.TEXT, b"Hello")
    assert masked[:2] == b"\x81\x85" and len(masked) == 2 + 4 + 5
    key = masked[2:6]
    assert bytes(b ^ key[i % 4] for i, b in enumerate(masked[6:])) == b"Hello"
    assert wsframes.frame_bytes(wsframes.BINARY, b"x" * 256, mask=False)[:4] == \
        b"\x82\x7e\x01\x00"
    assert wsframes.frame_bytes(wsframes.TEXT, b"x" * 70_000, fin=False)[:2] == b"\x01\xff"
    assert wsframes.Frame(True, wsframes.CLOSE, b"\x03\xef", False).close_code == 1007


def test_a_websocket_table_says_its_req_s_are_messages_and_each_servers_cpu():
    from bench.report.workloads import websocket_notes

    class Table:
        test, load, notes = "websocket", {"connection_mode": "keep-alive"}, []
        rows = []

    class Row:
        server, ranked, notes = "gin", True, []
    table = Table()
    table.rows = [Row()]
    doc = {"cases": [{"status": "ok", "server": "gin", "test": "websocket",
                      "stats": {"resources": {"cost": {"server": {"cpu_us_per_request": 7.25}}}}}]}
    websocket_notes(doc, [table], lambda case: "keep-alive")
    assert table.notes[0].startswith("req/sec is messages/s")
    assert table.notes[1] == "gin: server CPU 7.2 µs per message" and Row.notes == [2]
    assert workloads.DESCRIPTIONS["websocket"][1].startswith("GET /ws/ upgraded")


def test_compare_and_history_name_each_size_of_a_sized_test():
    from bench.analysis.compare import compare_case
    case = {"id": "s/none/raw/websocket_32b@c64@wsload", "server": "s", "database": "none",
            "orm": False, "test": "websocket", "status": "ok",
            "key": {"size": "32b", "test": "websocket"}}
    row = compare_case(None, case, thresholds={}, alpha=0.05, extra_reasons=[])
    assert row.test == "websocket 32b" and row.reason == "new in the candidate"


def test_k6_measures_the_websocket_test_when_asked_and_reads_its_messages():
    from bench.load import k6
    cases = plan(Settings(servers=("gin",), tests=("websocket",), generators=("k6",),
                          sizes=("4k",), ceiling=False), SPECS)
    assert [c.load.generator for c in cases] == ["k6"]
    argv = k6.k6_command("websocket", "https://h:1", k6.K6Settings(
        connections=2, duration_s=1, size="4k"))
    assert argv[-1].endswith("websocket.js") and "BENCH_SIZE=4096" in argv
    metrics = {"bench_ws_sent": {"values": {"count": 1002}},
               "bench_ws_echoed": {"values": {"count": 1000}},
               "bench_error_status": {"values": {"count": 3}},
               "data_received": {"values": {"count": 99}},
               "bench_ws_rtt": {"values": {"p(50)": 1.0, "p(99)": 2.0, "p(75)": 1, "p(90)": 1,
                                           "p(99.9)": 3, "min": 0, "avg": 1.1, "max": 4}}}
    out = "K6_JSON " + json.dumps({"metrics": metrics, "state": {"testRunDurationMs": 2000}})
    s = k6.parse_k6_output(out, settings=k6.K6Settings(connections=2, duration_s=2))
    assert (s["requests"], s["sent"], s["unanswered"]) == (1000, 1002, 2)
    assert s["requests_per_sec"] == 500 and s["errors"]["status"] == 3
    assert s["errors"]["total"] == 3 and s["latency_ms"]["p99"] == 2.0
    assert s["latency_histogram"] is None and "whole milliseconds" in s["latency_histogram_error"]
