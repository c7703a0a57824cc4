"""k6's figures of the websocket test (k6_scripts/websocket.js): the summary k6.py
returns for it, with wrk's normalised keys as wsload's (bench.load.wsload).

- sent: bench_ws_sent (messages written); requests: bench_ws_echoed (echoes received, of
  any content); unanswered = sent - requests.
- errors: the script's bench_error_<kind> counters: connect (a handshake that failed),
  read (a connection that broke), status (an echo that is not the message sent).
- latency: the bench_ws_rtt trend's percentiles, in whole milliseconds (k6's JavaScript
  has no finer clock); no histogram.
- bytes: data_received (the handshakes' answers included).
"""
from __future__ import annotations


SENT, ECHOED, RTT = "bench_ws_sent", "bench_ws_echoed", "bench_ws_rtt"
NO_HISTOGRAM = ("k6's websocket script times round trips with Date.now (whole "
                "milliseconds) into a trend, whose percentiles are all its summary has")


def is_websocket(metrics: dict) -> bool:
    return SENT in metrics or RTT in metrics


def summary(metrics: dict, total_s: float, count, latency) -> dict:
    """`count(metrics, name)` and `latency(metrics, name, answered=)`: k6.py's readers."""
    sent, echoed = count(metrics, SENT), count(metrics, ECHOED)
    errors = {k: count(metrics, f"bench_error_{k}")
              for k in ("connect", "read", "write", "status", "timeout", "lost")}
    errors["total"] = sum(errors.values())
    return {"requests": echoed, "sent": sent, "unanswered": max(0, sent - echoed),
            "duration_s": total_s,
            "requests_per_sec": echoed / total_s if total_s > 0 else 0.0,
            "bytes": count(metrics, "data_received"),
            "latency_ms": latency(metrics, RTT, answered=echoed > 0),
            "errors": errors, "latency_histogram": None,
            "latency_histogram_error": NO_HISTOGRAM}


