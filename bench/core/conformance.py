"""The HTTP conformance checks' vocabulary (bench.verify.conformance runs them): their
names in a fixed order, the three verdicts, and the compact cell the tables show. Pure,
so that verification and the report (which reads stored JSON only) say the same."""
from __future__ import annotations

from bench.core.protocols import HTTP2

PASS, FAIL, NOT_APPLICABLE = "pass", "fail", "n/a"

# name -> what it checks, with the RFC section it follows
CHECKS = {
    "date": "a Date header in IMF-fixdate that advances (RFC 9110 §6.6.1, §5.6.7)",
    "length": "the body is exactly as long as Content-Length or the chunking says "
              "(RFC 9112 §6.3)",
    "close": "Connection: close honoured: the server closes after the response "
             "(RFC 9112 §9.6)",
    "keep-alive": "several HTTP/1.1 requests answered on one connection (RFC 9112 §9.3)",
    "keep-alive-1.0": "HTTP/1.0 + Connection: keep-alive: kept open only where the "
                      "response says so (RFC 9112 §9.3, appendix C.2.2)",
    "pipelining": "three requests in one write answered in order (RFC 9112 §9.3.2)",
    "split": "a request sent in 1- and 7-byte writes answered (RFC 9112 §2)",
    "bare-lf": "a request whose lines end in a bare LF: rejected, or read as the CRLF "
               "request (RFC 9112 §2.2 allows either)",
    "cl-te": "Content-Length with Transfer-Encoding: rejected, or answered and the "
             "connection closed (RFC 9112 §6.1, §6.3)",
    "obs-fold": "a folded header line: rejected with 400, or unfolded to a space "
                "(RFC 9112 §5.2)",
    "big-header": "a 64 KiB header: a 4xx, or the right answer (RFC 9110 §5.4)",
}


def failed_checks(verdicts: dict) -> list[str]:
    return [name for name, v in verdicts.items() if v.get("verdict") == FAIL]


def cell(verdicts: dict | None) -> str:
    """"9/9", or "7/9 ✗date,close": passed over applicable, then the failed checks;
    "-" when no verdicts were recorded (an older run, or --no-verify). A check that is a
    suite of cases (h2spec: "117/144 ✗h2spec") counts its cases."""
    if not verdicts:
        return "-"
    applicable = [v for v in verdicts.values() if v.get("verdict") != NOT_APPLICABLE]
    passed = sum(v["passed"] if "passed" in v else v.get("verdict") == PASS for v in applicable)
    total = sum(v.get("applicable", 1) for v in applicable)
    failed = failed_checks(verdicts)
    return f"{passed}/{total}" + (f" ✗{','.join(failed)}" if failed else "")


def endpoint(proxy: str, protocol: str = "h1") -> str:
    """Where verdicts are kept for a case's endpoint: the proxy's name ("none": the server
    itself), with "@h2" or "@h2c" over HTTP/2 (h2spec's verdict, bench.verify.h2spec)."""
    return f"{proxy}@{protocol}" if protocol in HTTP2 else proxy
