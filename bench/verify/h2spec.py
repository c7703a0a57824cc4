"""HTTP/2 conformance with h2spec (github.com/summerwind/h2spec 2.2.1, built by
scripts/install_h2spec.sh): its 145 test cases of RFC 7540 and RFC 7541 (HPACK) against
the endpoint that speaks HTTP/2 (a server that speaks it natively, else the proxy that
terminates it), with its JUnit report read into counts and the failed cases' ids.

A warning, like the HTTP/1.1 conformance checks (bench.verify.conformance): an endpoint
that fails cases is still measured, and the tables say how many it passed.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.conformance import FAIL, PASS
from bench.paths import CACHE_DIR

VERSION = "2.2.1"
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
CHECK = "h2spec"
# h2spec waits this long for each expected frame: a case the endpoint fails costs this
# much, a case it passes only what the exchange takes (nginx 1.22 on this machine: the
# same 117 of 144 passed at 1 s and at 2 s, in 27 s and 53 s)
TIMEOUT_S = 1
# well above 145 cases x TIMEOUT_S: h2spec is stopped only if it hangs
WHOLE_TIMEOUT_S = 600


class H2specError(RuntimeError):
    """h2spec could not run, or wrote no report."""


@dataclass
class H2specResult:
    tests: int
    passed: int
    skipped: int
    failed: list[str] = field(default_factory=list)    # "http2/6.7/1 Sends a PING frame"

    @property
    def applicable(self) -> int:
        return self.tests - self.skipped

    def verdict(self, where: str) -> dict:
        """The conformance verdict the tables show: passed of applicable cases."""
        detail = f"h2spec {VERSION} against {where}: {self.passed} of {self.applicable} " \
                 f"cases passed ({self.skipped} skipped)"
        if self.failed:
            detail += "; failed: " + "; ".join(self.failed[:8]) + \
                      (f" and {len(self.failed) - 8} more" if len(self.failed) > 8 else "")
        return {"verdict": PASS if not self.failed else FAIL, "detail": detail,
                "passed": self.passed, "applicable": self.applicable,
                "failed": list(self.failed)}


def binary() -> str:
    """The set-up's h2spec (the harness's tool folder), else one on PATH."""
    built = CACHE_DIR / "bin" / "h2spec"
    found = str(built) if built.is_file() else shutil.which("h2spec")
    if not found:
        raise H2specError("h2spec is not installed: scripts/install_h2spec.sh builds it "
                          "(a run that needs it installs it first)")
    return found


def parse_report(text: str) -> H2specResult:
    """h2spec's JUnit report: a testsuite per section ("http2/6.7"), a testcase per case
    numbered from 1 in its section, <error> where it failed, <skipped> where the endpoint
    did not allow the case to run."""
    # its <error> texts quote the frames seen, raw: a PING's payload "h2spec\0\0" puts
    # characters XML 1.0 forbids into the report
    root = ET.fromstring(NOT_XML.sub("", text))
    tests = passed = skipped = 0
    failed = []
    for suite in root.iter("testsuite"):
        for number, case in enumerate(suite.iter("testcase"), 1):
            tests += 1
            if case.find("skipped") is not None:
                skipped += 1
            elif case.find("error") is not None or case.find("failure") is not None:
                failed.append(f"{case.get('package')}/{number} {case.get('classname')}")
            else:
                passed += 1
    if not tests:
        raise H2specError("h2spec's report lists no test case")
    return H2specResult(tests, passed, skipped, failed)


def run(binary: str, host: str, port: int, tls: bool, path: str = "/ping/",
        sections: tuple[str, ...] = (), timeout_s: float = TIMEOUT_S) -> H2specResult:
    """Every h2spec case (or those of `sections`, "http2/6.7") against host:port, over
    TLS with ALPN h2, else h2c with prior knowledge; the certificate is not verified
    (-k): the protocol checks verify it. `timeout_s`: how long h2spec waits for each
    expected frame (a whole second, or more, for an endpoint slower than a real server)."""
    with tempfile.TemporaryDirectory(prefix="h2spec-") as folder:
        report = Path(folder) / "junit.xml"
        argv = [binary, *sections, "-h", host, "-p", str(port), "-P", path, "-o", f"{timeout_s:g}",
                "-j", str(report)] + (["-t", "-k"] if tls else [])
        try:
            done = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=WHOLE_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise H2specError(f"h2spec did not finish: {exc}") from exc
        if not report.is_file():
            tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
            raise H2specError(f"h2spec wrote no report (exit {done.returncode}): "
                              + " / ".join(tail))
        return parse_report(report.read_text())
