"""One request over a case's protocol (bench.core.protocols), and what was negotiated:
the check that a server or the proxy in front of it is ready and speaks what the case
asked, before any load. httpx (with h2) speaks each: HTTP/1.1 over TLS offering only
http/1.1 by ALPN, HTTP/2 over TLS offering only h2 (a server that cannot answer h2 fails
the handshake or answers another protocol: both are errors, never a silent fall-back),
and h2c with prior knowledge. The certificate is verified against the run's own CA.
"""
from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.core import protocols
from bench.infra.certs import CIPHER_SUITE, TLS_VERSION


class ProtocolError(RuntimeError):
    """The endpoint did not answer over the protocol asked, or negotiated another one.
    `wrong_protocol`: its handshake completed selecting another protocol; `bad_certificate`:
    the run's certificate it presented failed verification (expired, another name).
    Asking again changes neither (a listener still starting is not that): `final`."""

    def __init__(self, why: str, wrong_protocol: bool = False, bad_certificate: bool = False):
        super().__init__(why)
        self.wrong_protocol, self.bad_certificate = wrong_protocol, bad_certificate

    @property
    def final(self) -> bool:
        return self.wrong_protocol or self.bad_certificate


# OpenSSL's verify results for a certificate that no CA the client trusts issued:
# X509_V_ERR_CERT_SIGNATURE_FAILURE (another CA of the same name: another run's),
# _DEPTH_ZERO_SELF_SIGNED_CERT, _SELF_SIGNED_CERT_IN_CHAIN,
# _UNABLE_TO_GET_ISSUER_CERT_LOCALLY, _UNABLE_TO_VERIFY_LEAF_SIGNATURE
UNKNOWN_ISSUER = frozenset({7, 18, 19, 20, 21})


def _certificate_refused(exc: BaseException) -> bool:
    """Whether `exc` or what caused it (httpx wraps ssl's error in its ConnectError) is a
    failed verification of the run's own certificate: expired, not yet valid, another
    name. A certificate of another issuer is not that: a listener may serve a placeholder
    until its configuration is loaded (Traefik's self-signed default certificate, until
    its file provider has read the run's, seen in CI on a busy machine), so it is asked
    again, and a listener that keeps serving one ends at the timeout with that why."""
    while exc is not None:
        if isinstance(exc, ssl.SSLCertVerificationError):
            return getattr(exc, "verify_code", None) not in UNKNOWN_ISSUER
        exc = exc.__cause__ or exc.__context__
    return False


@dataclass(frozen=True)
class Answer:
    status: int
    body: object                 # the JSON body, or the text when it is not JSON
    http_version: str            # "HTTP/1.1" / "HTTP/2", as the response came
    tls_version: str | None      # "TLSv1.3"; None without TLS
    cipher: str | None
    alpn: str | None

    def problems(self, protocol: str) -> list[str]:
        """What differs from the protocol asked and the run's one TLS version and cipher."""
        out = []
        want = "HTTP/2" if protocol in protocols.HTTP2 else "HTTP/1.1"
        if self.http_version != want:
            out.append(f"answered over {self.http_version}, not {want}")
        if protocol in protocols.TLS:
            if self.tls_version != TLS_VERSION:
                out.append(f"TLS version {self.tls_version}, not {TLS_VERSION}")
            if self.cipher != CIPHER_SUITE:
                out.append(f"cipher suite {self.cipher}, not {CIPHER_SUITE}")
        return out

    def negotiated(self) -> dict:
        return {"http_version": self.http_version, "alpn": self.alpn,
                "tls_version": self.tls_version, "cipher": self.cipher}


def tls_context(ca: Path, protocol: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols(["h2"] if protocol == "h2" else ["http/1.1"])
    return context


def get(url: str, protocol: str, *, ca: Path | None, headers: dict | None = None,
        timeout: float = 2.0) -> Answer:
    """GET `url` over `protocol`; ProtocolError when no answer came (with why)."""
    if protocol in protocols.TLS and ca is None:
        raise ValueError(f"{protocol} needs the run's CA to verify the certificate")
    http2 = protocol in protocols.HTTP2
    verify = tls_context(ca, protocol) if protocol in protocols.TLS else False
    try:
        with httpx.Client(http1=not http2, http2=http2, verify=verify, timeout=timeout,
                          headers=headers or {}) as client:
            response = client.get(url)
            stream = response.extensions.get("network_stream")
            tls = stream.get_extra_info("ssl_object") if stream is not None else None
            try:
                body = response.json()
            except ValueError:
                body = response.text[:200]
            return Answer(response.status_code, body, response.http_version,
                          tls.version() if tls else None, tls.cipher()[0] if tls else None,
                          tls.selected_alpn_protocol() if tls else None)
    except (httpx.HTTPError, ssl.SSLError, OSError) as exc:
        why = f"{type(exc).__name__}: {str(exc)[:200]}"
        if protocol == "h2" and not isinstance(exc, (ssl.SSLError, httpx.ConnectError)):
            selected = alpn(url, ca, timeout)
            if selected != "h2":
                raise ProtocolError(
                    f"the TLS handshake selected {selected or 'no application protocol'} "
                    f"where ALPN offered only h2: the endpoint does not speak HTTP/2 over "
                    f"TLS ({why})", wrong_protocol=True) from None
        raise ProtocolError(why, bad_certificate=_certificate_refused(exc)) from None


def alpn(url: str, ca: Path, timeout: float = 2.0) -> str | None:
    """What a TLS handshake offering only h2 selects at `url`'s host and port (None: the
    server selected nothing), for the message of a failed h2 request."""
    try:
        return _handshake(url, tls_context(ca, "h2"), timeout)
    except (OSError, ssl.SSLError):
        return None


def _handshake(url: str, context: ssl.SSLContext, timeout: float) -> str | None:
    """A TLS handshake with `url`'s host and port: the protocol ALPN selected (None: none);
    ssl.SSLError or OSError when there was no handshake."""
    parsed = httpx.URL(url)
    with socket.create_connection((parsed.host, parsed.port), timeout=timeout) as raw:
        with context.wrap_socket(raw, server_hostname=parsed.host) as tls:
            return tls.selected_alpn_protocol()


# offered alone by the ALPN refusal check: a protocol no endpoint speaks
UNSPOKEN = "webbench-unspoken/1"


def alpn_refusal(url: str, ca: Path, timeout: float = 2.0) -> tuple[bool, str]:
    """Whether the endpoint at `url` refuses a TLS handshake whose ALPN offers only a
    protocol it does not speak, as RFC 7301 §3.2 says it SHALL: with a fatal
    no_application_protocol alert. (passed, what happened)."""
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols([UNSPOKEN])
    try:
        selected = _handshake(url, context, timeout)
    except ssl.SSLError as exc:
        # OpenSSL says "tlsv1 alert no application protocol" (reason
        # TLSV1_ALERT_NO_APPLICATION_PROTOCOL where the build names it)
        if "NO_APPLICATION_PROTOCOL" in f"{exc.reason} {exc}".upper().replace(" ", "_"):
            return True, f"offered only {UNSPOKEN} by ALPN: refused with the " \
                         f"no_application_protocol alert (RFC 7301 §3.2)"
        return False, f"offered only {UNSPOKEN} by ALPN: the handshake failed, but " \
                      f"not with the no_application_protocol alert: {str(exc)[:150]}"
    except OSError as exc:
        return False, f"no TLS handshake to check ALPN with: {str(exc)[:150]}"
    return False, (f"offered only {UNSPOKEN} by ALPN, the handshake went on selecting "
                   f"{selected or 'no protocol'}: RFC 7301 §3.2 says a fatal "
                   f"no_application_protocol alert")
