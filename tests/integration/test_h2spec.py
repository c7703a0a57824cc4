"""h2spec for real (bench.verify.h2spec), built on first use as a run builds it: a
fixture HTTP/2 server that breaks one rule (it never acknowledges a PING) fails exactly
the PING cases, the same server keeping the rule passes them; and nginx terminating
HTTP/2 in front of a real server gets the whole suite's counts, kept as the endpoint's
conformance verdict by the protocol checks."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.core.conformance import FAIL, PASS
from bench.core.protocols import HTTP2
from bench.setup.install import install
from bench.verify import h2spec
from bench.verify.protocol_checks import h2spec_verdict
from tests.conftest import TEST_SERVER_PORT
from tests.integration.test_protocols import proxy
from tests.integration.test_proxy import upstream  # noqa: F401

pytestmark = pytest.mark.integration

H2_SERVER = Path(__file__).parents[1] / "fixtures" / "h2" / "server.py"
PING = "http2/6.7"
# h2spec's wait for each expected frame, for the Python fixture: a case it passes ends at
# the frame, a case it fails costs the whole wait. At the runs' 1 s, the fixture's GOAWAY
# for a PING of the wrong length (6.7/4) came too late once, with 4 test workers on 2
# cores: the event h2spec waits for, given the time a busy machine takes to send it
FIXTURE_WAIT_S = 5


@pytest.fixture(scope="module")
def binary():
    failure = install("h2spec")      # built on first use, as a run does (bench.setup.install)
    assert failure is None, failure
    return h2spec.binary()


def h2_fixture(*args):
    server = subprocess.Popen([sys.executable, str(H2_SERVER), str(TEST_SERVER_PORT), *args],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    ready = server.stdout.readline()           # printed once the port is bound
    assert ready.strip() == "listening", f"the HTTP/2 fixture did not start: {ready!r}"
    return server


@pytest.mark.parametrize("broken", [False, True])
def test_a_server_that_never_acknowledges_a_ping_fails_exactly_the_ping_cases(binary, broken):
    server = h2_fixture(*(["--break", "ping-ack"] if broken else []))
    try:
        result = h2spec.run(binary, "127.0.0.1", TEST_SERVER_PORT, tls=False, sections=(PING,),
                             timeout_s=FIXTURE_WAIT_S)
    finally:
        server.terminate()
        server.wait(10)
    assert result.tests == 4 and result.skipped == 0
    if broken:      # 6.7/2 sends a PING with ACK, then a PING to see nothing came before
        assert result.failed == ["http2/6.7/1 Sends a PING frame",
                                 "http2/6.7/2 Sends a PING frame with ACK"]
        assert result.verdict("fixture")["verdict"] == FAIL
    else:
        assert result.failed == [] and result.verdict("fixture")["verdict"] == PASS


def test_nothing_listening_is_an_error_not_a_count(binary):
    with pytest.raises(h2spec.H2specError):
        h2spec.run(binary, "127.0.0.1", TEST_SERVER_PORT, tls=False, sections=(PING,))


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
@pytest.mark.parametrize("protocol", sorted(HTTP2))
def test_nginx_terminating_http2_gets_the_whole_suites_counts_once_per_run(
        upstream, binary, tmp_path, protocol):  # noqa: F811
    from bench.infra import certs
    tls = certs.make(tmp_path / "tls", ["localhost", "127.0.0.1"])
    seen: dict = {}
    with proxy(tmp_path, protocol, tls) as running:
        verdict = h2spec_verdict(running.base_url, "nginx", protocol, seen)
    # 145 cases, one skipped where the endpoint's settings do not allow it to run
    assert 144 <= verdict["applicable"] <= 145 and 100 <= verdict["passed"], verdict
    assert verdict["detail"].startswith(f"h2spec 2.2.1 against nginx over {protocol}: ")
    # the proxy's HTTP/2 is the same whichever server is behind it: asked again, the
    # run's verdict, without running h2spec (nothing listens any more)
    assert h2spec_verdict("https://127.0.0.1:1", "nginx", protocol, seen) is verdict
