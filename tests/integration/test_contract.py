"""Every server variant in servers/ against the contract, on real databases, and every
server over the protocols it speaks itself (its manifest's `protocols`).

One parametrised test, not one copy per framework: the checks themselves live in
bench/verify/ and the server is brought up by bench.infra.lifecycle (the same code that
guards every benchmark run), so a server passes here exactly when a run would measure it.
"""
from __future__ import annotations

import pytest

from bench.core import dataset, manifest
from bench.core.pipelining import DEFAULT_DEPTH
from bench.core.plan import Variant
from bench.core.workloads import DELAY_TEST, ENCODINGS, STATIC_TEST, UPLOAD_TEST, WEBSOCKET_TEST
from bench.core.settings import Settings
from bench.infra import db
from bench.infra.server import log_tail
from bench.verify import verified_server
from tests.conftest import TEST_SERVER_PORT, selected_servers

# server_checks: `make test-changed` runs these for the servers a change selects
pytestmark = [pytest.mark.integration, pytest.mark.server_checks]
SPECS = selected_servers(manifest.discover())
VARIANTS = [Variant(spec, d, o) for spec in SPECS.values() for d, o in spec.variants()] + \
           [Variant(spec, "none", False) for spec in SPECS.values()]
# Two workers are enough to check answers and keep the suite quick on a small machine;
# the connection budget still gives every process at least one connection.
SETTINGS = Settings(workers=2, db_connections=4, port=TEST_SERVER_PORT)



# what the variant without a database is also verified on: every HTTP workload
# (servers/README.md) its manifest does not declare unsupported, compression included
WORKLOADS = {"pipeline": DEFAULT_DEPTH,
             "tests": (STATIC_TEST, UPLOAD_TEST, DELAY_TEST, WEBSOCKET_TEST),
             "compression": ENCODINGS}


# every variant with the database suite's checks too (where its manifest declares it)
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.key)
def test_server_honours_the_contract(variant, databases, built, tmp_path):
    endpoint = databases.get(variant.database)
    log = tmp_path / "server.log"
    with verified_server(variant, SETTINGS, endpoint, log, token=SETTINGS.token,
                         suite=True, **(WORKLOADS if endpoint is None else {})) as running:
        report = running.verification
    assert report.passed, report.summary_text() + "\n" + log_tail(log)
    if endpoint:   # verification restored what its PATCH checks changed
        assert db.fetch_users(endpoint, "user_id <= %s", (20,)) == dataset.all_users()[:20]


OWN_PROTOCOLS = [spec for spec in SPECS.values() if spec.protocols]


@pytest.fixture(scope="module")
def run_certificates(tmp_path_factory):
    from bench.infra import certs
    return certs.make(tmp_path_factory.mktemp("tls"), ["localhost", "127.0.0.1"])


# each server that speaks TLS or HTTP/2 itself: the contract's answers on its own
# listener of each, what it negotiated, ALPN refusal and h2spec against its HTTP/2
@pytest.mark.parametrize("spec", OWN_PROTOCOLS, ids=lambda s: s.id)
def test_server_speaks_its_own_protocols(spec, builder, run_certificates, tmp_path):
    from bench.infra.proxy import available_proxies
    from bench.verify.h2spec import CHECK
    builder(spec)
    log = tmp_path / "server.log"
    with verified_server(Variant(spec, "none", False), SETTINGS, None, log,
                         token=SETTINGS.token, suite=False, protocols=spec.protocols,
                         tests=(WEBSOCKET_TEST,),
                         edge=available_proxies()["nginx"], tls=run_certificates,
                         h2spec_seen={}) as running:
        report = running.verification
    assert report.passed, report.summary_text() + "\n" + log_tail(log)
    checks = {c.name: c for c in report.checks}
    if "h1-tls" in spec.protocols and WEBSOCKET_TEST not in spec.unsupported:
        # wss on its own TLS listener (its every websocket check, as one)
        assert checks["websocket over h1-tls (on its own listener)"].passed
    for protocol in spec.protocols:
        assert checks[f"protocol {protocol}"].detail.startswith("on its own listener")
        if protocol != "h2c":
            assert checks[f"protocol {protocol}: ALPN refusal"].passed, \
                checks[f"protocol {protocol}: ALPN refusal"]
        if protocol in ("h2", "h2c"):      # h2spec ran against it (a warning's counts)
            verdict = report.conformance[f"none@{protocol}"][CHECK]
            assert verdict.get("applicable", 0) >= 144, verdict
