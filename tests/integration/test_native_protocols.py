"""A server's own TLS and HTTP/2 (bench.infra.native, a manifest's `protocols`): gin's
Go crypto/tls and net/http HTTP/2 on listeners the harness asks for, ready only once
/ping/ over the case's protocol answers as over HTTP/1.1 and negotiated that protocol,
the run's TLS version and cipher suite; verified over each on its own listener, with
h2spec against it; and a server that claims h2 but negotiates HTTP/1.1 is caught by the
readiness over h2, while its real h1-tls is measured. On another host (a network
namespace of the test bed), the certificate is copied there and the probe still checks
it against the run's CA here."""
from __future__ import annotations

import dataclasses
import shutil

import pytest

from bench.core import manifest, protocols
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra import certs, protocol_probe
from bench.infra.lifecycle import running_server
from bench.infra.proxy import available_proxies
from bench.infra.server import ServerError
from bench.load.generator import LoadRequest
from bench.load.h2load import H2LOAD
from bench.paths import REPO
from bench.verify import verified_server
from bench.verify.h2spec import CHECK
from tests.conftest import NETNS, TEST_SERVER_PORT
from tests.netns.testbed import netns_testbed  # noqa: F401 - the module's fixture

pytestmark = pytest.mark.integration

GIN = manifest.discover()["gin"]
CLAIMS_H2 = manifest.discover([REPO / "tests" / "fixtures" / "servers"])["claims_h2"]
SETTINGS = Settings(workers=2, port=TEST_SERVER_PORT)
PLAIN = "/plain/?param1=a&param2=b&param3=c"


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return certs.make(tmp_path_factory.mktemp("tls"), ["localhost", "127.0.0.1"])


@pytest.mark.parametrize("protocol", ["h1-tls", "h2", "h2c"])
def test_gin_serves_each_protocol_itself_on_the_cases_port(builder, tls, tmp_path, protocol):
    builder(GIN)
    with running_server(Variant(GIN, "none", False), SETTINGS, None, tmp_path / "gin.log",
                        protocol=protocol, tls=tls) as running:
        assert running.proxy is None
        # the load goes to its own listener on the case's port; HTTP/1.1 moved aside
        assert running.base_url == running.native.base_url == \
            f"{protocols.scheme(protocol)}://127.0.0.1:{SETTINGS.port}"
        assert running.server.base_url == f"http://127.0.0.1:{SETTINGS.upstream_port}"
        seen = running.native.negotiated
        assert seen["http_version"] == ("HTTP/1.1" if protocol == "h1-tls" else "HTTP/2")
        if protocol in protocols.TLS:
            assert (seen["tls_version"], seen["cipher"]) == (certs.TLS_VERSION,
                                                             certs.CIPHER_SUITE)
            assert seen["alpn"] == ("h2" if protocol == "h2" else "http/1.1")
        answer = protocol_probe.get(running.base_url + PLAIN, protocol, ca=tls.ca,
                                    headers={"token": SETTINGS.token})
        assert answer.status == 200 and answer.problems(protocol) == []
        if protocol in protocols.HTTP2:       # h2load on it, negotiating the protocol
            request = LoadRequest(test="plain", base_url=running.base_url, connections=2,
                                  threads=1, duration_s=1, timeout_s=5, seed=1,
                                  token=SETTINGS.token, protocol=protocol, streams=4)
            result = H2LOAD.run(request)
            assert result.summary["requests"] > 0 and result.summary["errors"]["total"] == 0
            assert result.summary["negotiated"]["protocols"] == [protocol]


def test_verification_checks_gins_own_listeners_and_runs_h2spec_against_them(builder, tls,
                                                                             tmp_path):
    builder(GIN)
    seen = {("gin", "h2c"): {"verdict": "kept", "detail": "h2spec's verdict of this run"}}
    with verified_server(Variant(GIN, "none", False), SETTINGS, None, tmp_path / "gin.log",
                         token=SETTINGS.token, suite=False,
                         protocols=("h1-tls", "h2", "h2c"),
                         edge=available_proxies()["nginx"], tls=tls,
                         h2spec_seen=seen) as running:
        checks = {c.name: c for c in running.verification.checks}
        conformance = running.verification.conformance
    for protocol in ("h1-tls", "h2", "h2c"):
        check = checks[f"protocol {protocol}"]
        assert check.passed and check.detail.startswith("on its own listener"), check
    assert "TLS_AES_128_GCM_SHA256" in checks["protocol h2"].detail
    # Go's crypto/tls refuses an unknown ALPN protocol as RFC 7301 says
    assert checks["protocol h1-tls: ALPN refusal"].passed
    # h2spec ran against gin's own h2 (the direct endpoint, "none@h2"), not a proxy's;
    # its h2c verdict is the one this run already had
    h2 = conformance["none@h2"][CHECK]
    assert 144 <= h2["applicable"] <= 145 and h2["passed"] > 100, h2
    assert h2["detail"].startswith("h2spec 2.2.1 against gin over h2: ")
    assert conformance["none@h2c"][CHECK] is seen[("gin", "h2c")]
    assert not any(key.startswith("nginx") for key in conformance)


def test_a_server_claiming_h2_but_negotiating_http1_fails_the_start_over_h2(tls, tmp_path):
    variant = Variant(CLAIMS_H2, "none", False)
    with running_server(variant, SETTINGS, None, tmp_path / "ok.log", protocol="h1-tls",
                        tls=tls) as running:      # its TLS is real: measured directly
        assert running.native.negotiated["alpn"] == "http/1.1"
    with pytest.raises(ServerError) as caught:
        with running_server(variant, SETTINGS, None, tmp_path / "h2.log", protocol="h2",
                            tls=tls):
            pass
    assert "claims_h2" in caught.value.reason and "h2" in caught.value.reason
    assert "does not speak h2" in caught.value.reason \
        and "selected no application protocol where ALPN offered only h2" in caught.value.reason


@NETNS
def test_a_server_or_proxy_on_another_host_presents_the_runs_certificate_copied_there(
        netns_testbed, builder, tmp_path):
    builder(GIN)
    host = netns_testbed.remote_host("server", workdir=str(REPO))
    address = netns_testbed.nodes["server"].address
    run = f"run-{tmp_path.name}"
    tls = certs.make(tmp_path / run / "tls", ["localhost", address])
    there = REPO / "remote-tmp" / f"tls-{run}"
    try:
        with running_server(Variant(GIN, "none", False),
                            dataclasses.replace(SETTINGS, host=address), None,
                            tmp_path / "gin.log", host=host, protocol="h2",
                            tls=tls) as running:
            assert running.base_url == f"https://{address}:{SETTINGS.port}"
            assert running.native.negotiated["alpn"] == "h2"
            # what the server host read: the run's certificate, in its workdir
            assert (there / "server.pem").read_bytes() == tls.cert.read_bytes()
            answer = protocol_probe.get(running.base_url + PLAIN, "h2", ca=tls.ca,
                                        headers={"token": SETTINGS.token})
            assert answer.status == 200 and answer.problems("h2") == []
        # a proxy terminating TLS there gets it the same way
        with running_server(Variant(GIN, "none", False),
                            dataclasses.replace(SETTINGS, host=address), None,
                            tmp_path / "proxied.log", host=host, protocol="h1-tls", tls=tls,
                            proxy=available_proxies()["nginx"]) as running:
            assert running.native is None and running.proxy.negotiated["tls_version"] == \
                certs.TLS_VERSION
            assert running.base_url == f"https://{address}:{SETTINGS.port}"
    finally:
        host.close()
        shutil.rmtree(there, ignore_errors=True)
