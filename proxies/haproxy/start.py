"""Start the HAProxy reverse proxy: haproxy.cfg reads the harness's BENCH_* environment
itself; the one thing it cannot say is where the run's private key is.

HAProxy 2.6's `crt <file>` loads the key from the certificate file or from `<file>.key`
beside it (`ssl-load-extra-del-ext` would make that `<name>.key`, but only for a file
named `*.crt`; a `key` keyword came in 3.0's crt-store). The harness gives two files,
server.pem and server.key, in the run's folder, which is not ours to write into. So over
TLS (h1-tls, h2) this script makes a private folder (exec_proxy.private_home: 0700, one
per proxy and port, emptied at each start) holding two symbolic links, `server.pem` to
BENCH_TLS_CERT and `server.pem.key` to BENCH_TLS_KEY, and gives haproxy.cfg the first
as BENCH_HAPROXY_CRT: no key material is copied anywhere. Then, for every protocol,
exec_proxy.py's main finds the binary and execs it with this script's arguments.
Standard library only.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "_common"))

from exec_proxy import fail, main as exec_proxy, private_home  # noqa: E402

INSTALL_HINT = "`make setup` installs it (Debian/Ubuntu: apt-get install haproxy)"
TLS_PROTOCOLS = ("h1-tls", "h2")        # bench.core.protocols.TLS


def certificate_path() -> str:
    """The run's certificate as a path HAProxy finds its key beside (`<path>.key`)."""
    files = {}
    for name in ("BENCH_TLS_CERT", "BENCH_TLS_KEY"):
        value = os.environ.get(name, "")
        if not value or not Path(value).is_file():
            fail(f"BENCH_PROXY_PROTOCOL={os.environ['BENCH_PROXY_PROTOCOL']} needs {name}, "
                 f"the PEM file of the run's certificate or key (the harness sets it); "
                 f"got {value!r}")
        files[name] = Path(value).resolve()
    folder = private_home("haproxy")
    cert = folder / "server.pem"
    cert.symlink_to(files["BENCH_TLS_CERT"])
    Path(f"{cert}.key").symlink_to(files["BENCH_TLS_KEY"])
    return str(cert)


def run(args: list[str]) -> None:
    if os.environ.get("BENCH_PROXY_PROTOCOL", "h1") in TLS_PROTOCOLS:
        os.environ["BENCH_HAPROXY_CRT"] = certificate_path()
    exec_proxy(["haproxy", INSTALL_HINT, "--", *args])


if __name__ == "__main__":
    run(sys.argv[1:])
