"""TLS and HTTP/2 for real (bench.core.protocols): the nginx proxy in front of a real
server terminates each protocol with the run's certificate; its readiness is asked over
that protocol; h2load loads it and reports what it negotiated. And each fault is caught
by its own check: a proxy that answers another protocol than the case's (the readiness
probe), a certificate that has expired (the handshake's verification), a generator that
negotiated another protocol (the sample)."""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import socket
import ssl
import threading

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from bench.infra import certs, protocol_probe
from bench.infra.proxy import ProxyError, available_proxies, running_proxy
from bench.load.generator import LoadError, LoadRequest
from bench.load.h2load import H2LOAD
from tests.integration.test_proxy import NGINX, PROXY_PORT, TOKEN, UPSTREAM_PORT, upstream  # noqa: F401

pytestmark = pytest.mark.integration


def proxy(tmp_path, protocol, tls, spec=NGINX):
    return running_proxy(spec, listen_host="127.0.0.1", listen_port=PROXY_PORT,
                         upstream_host="127.0.0.1", upstream_port=UPSTREAM_PORT, workers=1,
                         log_path=tmp_path / f"proxy-{protocol}.log", protocol=protocol, tls=tls)


# every proxy over every protocol its proxy.toml says it terminates (Traefik, built from
# source, in `make test-all`)
TERMINATING = [pytest.param(spec, protocol, id=f"{name}-{protocol}",
                            marks=pytest.mark.full if spec.build else ())
               for name, spec in available_proxies().items()
               for protocol in ("h1-tls", "h2", "h2c") if protocol in spec.protocols]


@pytest.mark.parametrize("spec, protocol", TERMINATING)
def test_the_proxy_terminates_each_protocol_and_says_what_it_negotiated(upstream, tmp_path,
                                                                       spec, protocol):
    tls = certs.make(tmp_path / "tls", ["localhost", "127.0.0.1"])
    with proxy(tmp_path, protocol, tls, spec) as running:
        assert running.base_url.startswith("https://" if protocol != "h2c" else "http://")
        seen = running.negotiated
        assert seen["http_version"] == ("HTTP/1.1" if protocol == "h1-tls" else "HTTP/2")
        if protocol != "h2c":
            assert (seen["tls_version"], seen["cipher"]) == (certs.TLS_VERSION,
                                                             certs.CIPHER_SUITE)
            assert seen["alpn"] == ("h2" if protocol == "h2" else "http/1.1")
        answer = protocol_probe.get(f"{running.base_url}/plain/?param1=a&param2=b&param3=c",
                                    protocol, ca=tls.ca, headers={"token": TOKEN})
        assert answer.status == 200 and answer.problems(protocol) == []
        if protocol in ("h2", "h2c"):
            request = LoadRequest(test="plain", base_url=running.base_url, connections=2,
                                  threads=1, duration_s=1, timeout_s=5, seed=1, token=TOKEN,
                                  protocol=protocol, streams=4)
            result = H2LOAD.run(request)
            assert result.summary["requests"] > 0 and result.summary["errors"]["total"] == 0
            assert result.summary["negotiated"]["protocols"] == [protocol]
            # every logged response (the log may lack a few the report counted as the
            # window closed: then the summary says so)
            logged = result.summary["latency_histogram"]["count"]
            assert 0 <= result.summary["requests"] - logged <= 2 * 4
            assert (logged == result.summary["requests"]) != \
                ("latency_histogram_error" in result.summary)
            # the same proxy asked for the other HTTP/2: h2load's sample is refused
            other = dataclasses.replace(request, protocol="h2c" if protocol == "h2" else "h2")
            with pytest.raises(LoadError, match="negotiated"):
                H2LOAD.run(other)


def test_a_proxy_answering_http1_where_h2_was_asked_is_caught_by_the_probe(upstream,
                                                                          tmp_path):
    """A proxy whose TLS socket has no HTTP/2 (nginx's h1-tls listen) as the h2 edge:
    ALPN offers only h2, the proxy selects none and cannot read the HTTP/2 preface; the
    probe says so. And an HTTP/1.1 answer where HTTP/2 was asked is named by problems()."""
    tls = certs.make(tmp_path / "tls", ["localhost", "127.0.0.1"])
    with proxy(tmp_path, "h1-tls", tls) as running:
        with pytest.raises(protocol_probe.ProtocolError,
                           match="selected no application protocol where ALPN offered only h2"):
            protocol_probe.get(f"{running.base_url}/ping/", "h2", ca=tls.ca)
        answer = protocol_probe.get(f"{running.base_url}/ping/", "h1-tls", ca=tls.ca)
        assert answer.problems("h1-tls") == []
        assert answer.problems("h2") == ["answered over HTTP/1.1, not HTTP/2"]


def test_an_expired_certificate_fails_the_handshake_and_the_proxys_readiness(upstream,
                                                                            tmp_path):
    tls = certs.make(tmp_path / "tls", ["localhost", "127.0.0.1"], valid_days=1,
                     now=datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))
    # a certificate that fails verification fails the readiness at the first handshake
    # (asking again until the timeout would change nothing), not as a timeout's last why
    spec = dataclasses.replace(NGINX, ready_timeout=30.0)
    with pytest.raises(ProxyError, match="cannot answer --protocol h2: .*certificate has expired"):
        with proxy(tmp_path, "h2", tls, spec=spec):
            pass


def test_a_proxy_that_does_not_declare_a_protocol_is_refused_before_it_starts(tmp_path):
    only_h1 = dataclasses.replace(NGINX, protocols=("h1",))
    with pytest.raises(ProxyError, match="does not terminate h2c"):
        with proxy(tmp_path, "h2c", None, spec=only_h1):
            pass


@contextlib.contextmanager
def lenient_tls_endpoint(tls):
    """A TLS endpoint speaking h2 by ALPN that goes on without a protocol when the client
    offers none it speaks (Python's ssl, like OpenSSL's default): what RFC 7301 forbids."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls.cert, tls.key)
    context.set_alpn_protocols(["h2"])
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with context.wrap_socket(conn, server_side=True) as tls_conn:
                tls_conn.recv(1)          # until the client closes
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        thread.join(10)


def test_a_handshake_offering_only_an_unspoken_protocol_is_refused_as_rfc_7301_says(
        upstream, tmp_path):  # noqa: F811
    tls = certs.make(tmp_path / "tls", ["localhost", "127.0.0.1"])
    with proxy(tmp_path, "h2", tls) as running:
        passed, detail = protocol_probe.alpn_refusal(running.base_url, tls.ca)
    assert passed, detail
    assert detail.endswith("refused with the no_application_protocol alert (RFC 7301 §3.2)")
    with lenient_tls_endpoint(tls) as url:
        passed, detail = protocol_probe.alpn_refusal(url, tls.ca)
    assert not passed and "the handshake went on selecting no protocol" in detail


@pytest.mark.full          # every load generator besides wrk: `make test-all`
@pytest.mark.parametrize("name", ["k6", "oha"])
def test_k6_and_oha_measure_h1_tls_trusting_the_runs_ca(upstream, tmp_path, name):
    """k6 and oha over h1-tls through the proxy, closed loop and at a fixed rate: with the
    run's CA each verifies the certificate and every answer comes over HTTP/1.1 (h2 is
    offered by the proxy, and neither must take it); without the CA, the same
    certificate is refused, so it was verified."""
    from bench.load import for_request
    from bench.setup.install import install
    assert install(name) is None
    tls = certs.make(tmp_path / "tls", ["localhost", "127.0.0.1"])
    with proxy(tmp_path, "h2", tls) as running:       # ALPN offers h2 and http/1.1
        request = LoadRequest(test="plain", base_url=running.base_url, connections=2,
                              threads=1, duration_s=1, timeout_s=5, seed=1, token=TOKEN,
                              protocol="h1-tls", ca_file=str(tls.ca))
        generator = for_request(request, closed_loop=name)
        assert generator.name == name
        result = generator.run(request)
        assert result.summary["requests"] > 0 and result.summary["errors"]["total"] == 0
        untrusted = generator.run(dataclasses.replace(request, ca_file=None))
        assert untrusted.summary["errors"]["total"] > 0
        assert untrusted.summary["requests"] == 0 or \
            untrusted.summary["errors"]["total"] == untrusted.summary["requests"]
        # and at a fixed rate (--rate over h1-tls, the open model)
        at_rate = dataclasses.replace(request, rate=200.0)
        paced = for_request(at_rate, open_model=name)
        assert paced.name == name
        result = paced.run(at_rate)
        assert result.summary["requests"] > 50 and result.summary["errors"]["total"] == 0, \
            result.summary


def test_h2load_gives_up_on_connections_that_never_answer_within_the_request_timeout():
    """A listener that accepts and never speaks (no TLS handshake, no HTTP/2 preface):
    without -N h2load would wait for ever and the sample be killed at its limit; with the
    request timeout it ends and says why."""
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        held = []
        accepting = threading.Thread(target=lambda: held.extend(
            silent.accept()[0] for _ in range(2)), daemon=True)
        accepting.start()
        request = LoadRequest(test="plain", base_url=f"https://127.0.0.1:{port}",
                              connections=2, threads=1, duration_s=1, timeout_s=2, seed=1,
                              token=TOKEN, protocol="h2", streams=4)
        with pytest.raises(LoadError, match="none of its 2 connections was answered within "
                                            "the request timeout .2 s, -N.: no TLS handshake"):
            H2LOAD.run(request)
        for conn in held:
            conn.close()


def self_signed(folder, name: str) -> certs.Certificates:
    """A certificate that signs itself, as a proxy's placeholder default is."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    folder.mkdir(parents=True)
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    return certs.Certificates(folder / "cert.pem", folder / "cert.pem", folder / "key.pem",
                              (name,))


def test_a_certificate_of_another_issuer_is_asked_again_and_the_runs_own_expired_one_is_not(
        tmp_path):
    """The readiness probes stop at the first handshake only when asking again cannot
    change the answer: the run's own certificate failing verification. A certificate no
    CA of the run issued is what a proxy serves until its configuration loads (Traefik's
    self-signed default, seen in CI): not final, so its readiness waits on."""
    ours = certs.make(tmp_path / "ours", ["127.0.0.1"])
    another_runs = certs.make(tmp_path / "other", ["127.0.0.1"])   # a CA of the same name
    placeholder = self_signed(tmp_path / "placeholder", "PLACEHOLDER DEFAULT CERT")
    expired = certs.make(tmp_path / "expired", ["127.0.0.1"], valid_days=1,
                         now=datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc))
    for served, ca, final, why in ((placeholder, ours.ca, False, "self-signed certificate"),
                                   (another_runs, ours.ca, False, "signature failure"),
                                   (expired, expired.ca, True, "certificate has expired")):
        with lenient_tls_endpoint(served) as url:
            with pytest.raises(protocol_probe.ProtocolError, match=why) as caught:
                protocol_probe.get(f"{url}/ping/", "h1-tls", ca=ca, timeout=5)
        assert caught.value.final is final and caught.value.bad_certificate is final, why
