"""Throwaway TLS certificates for one run (`--protocol h1-tls,h2`): a certificate
authority of the run's own and one server certificate, signed by it, for the names the
load generator and the verification use (localhost and the addresses of the hosts in
use). Made with `cryptography`, never fetched or kept: they live in the run's folder.

One key type for every server and proxy: ECDSA on P-256 (ecdsa_secp256r1_sha256).
Every TLS stack the servers use takes it (rustls, Go's crypto/tls, OpenSSL under nginx,
Node.js and Python, Java's JSSE), it is what public CAs issue by default, and a P-256
signature costs the server a fraction of an RSA-2048 one: the handshake's cost is the
protocol's, not a key size some deployments chose.
"""
from __future__ import annotations

import dataclasses
import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

KEY_TYPE = "ECDSA P-256"
# the same TLS version and cipher suite on every server and proxy, checked on the wire
TLS_VERSION = "TLSv1.3"
CIPHER_SUITE = "TLS_AES_128_GCM_SHA256"
VALID_DAYS = 7              # a run's certificate outlives any run, and no more


@dataclass(frozen=True)
class Certificates:
    """Paths of a run's PEM files: `ca` (what clients trust), `cert` and `key` (what the
    server or proxy presents)."""
    ca: Path
    cert: Path
    key: Path
    names: tuple[str, ...]


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "webbench run"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _alt_names(names: list[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    for name in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            out.append(x509.DNSName(name))
    return out


def _write_key(key, path: Path) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def make(folder: Path, names: list[str], *, now: datetime.datetime | None = None,
         valid_days: float = VALID_DAYS) -> Certificates:
    """A new CA and a server certificate for `names` (host names or IP addresses) in
    `folder`; `now` and `valid_days` let a test make one that has expired."""
    if not names:
        raise ValueError("a server certificate needs at least one name")
    folder.mkdir(parents=True, exist_ok=True)
    start = (now or datetime.datetime.now(datetime.timezone.utc)) - datetime.timedelta(minutes=5)
    end = start + datetime.timedelta(days=valid_days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("webbench throwaway CA")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                       crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False,
                                       decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name(names[0])).issuer_name(ca_name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(_alt_names(names)), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = Certificates(folder / "ca.pem", folder / "server.pem", folder / "server.key",
                         tuple(names))
    paths.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_key(key, paths.key)
    return paths


def for_clients(folder: Path, *addresses: str) -> Certificates:
    """A run's certificates in `folder` for the names its clients use: localhost and
    `addresses` (the settings' host, and the server host's address under --hosts)."""
    return make(folder, list(dict.fromkeys(["localhost", *addresses])))


def ca_on_host(tls: Certificates, host) -> str:
    """Where `host` (a client's) reads the run's CA: copied beside the certificate on
    another machine, so a generator there verifies what it is served."""
    if not host.remote:
        return str(tls.ca)
    path = host.path(f"remote-tmp/tls-{tls.ca.parent.parent.name}/{tls.ca.name}")
    _put_once(host, tls.ca, path)
    return path


def on_host(tls: Certificates, host) -> Certificates:
    """The certificate and key where `host` (bench.infra.seam.Host) reads them: on another
    machine, copied into its workdir (remote-tmp/tls-<run>/) for the server or proxy
    that presents them; the CA stays here, where the probes run."""
    if not host.remote:
        return tls
    folder = f"remote-tmp/tls-{tls.cert.parent.parent.name}"
    cert, key = host.path(f"{folder}/{tls.cert.name}"), host.path(f"{folder}/{tls.key.name}")
    _put_once(host, tls.cert, cert)
    _put_once(host, tls.key, key)
    return dataclasses.replace(tls, cert=Path(cert), key=Path(key))


# (host, its path, the local file's identity) already copied by this process: a run's
# certificate is made once and every sample's start asks for it on the same host again
_COPIED: set[tuple] = set()


def _put_once(host, local: Path, remote: str) -> None:
    stat = local.stat()
    key = (host.name, remote, str(local), stat.st_mtime_ns, stat.st_size)
    if key not in _COPIED:
        host.put(local, remote)
        _COPIED.add(key)
