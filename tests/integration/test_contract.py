"""Every server variant in servers/ against the contract, on real databases.

One parametrised test, not one copy per framework: the checks themselves live in
bench/verify/ and the server is brought up by bench.infra.lifecycle (the same code that
guards every benchmark run), so a server passes here exactly when a run would measure it.
"""
from __future__ import annotations

import pytest

from bench.core import dataset, manifest
from bench.core.plan import Variant
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



# every variant with the database suite's checks too (where its manifest declares it)
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.key)
def test_server_honours_the_contract(variant, databases, built, tmp_path):
    endpoint = databases.get(variant.database)
    log = tmp_path / "server.log"
    with verified_server(variant, SETTINGS, endpoint, log, token=SETTINGS.token,
                         suite=True) as running:
        report = running.verification
    assert report.passed, report.summary_text() + "\n" + log_tail(log)
    if endpoint:   # verification restored what its PATCH checks changed
        assert db.fetch_users(endpoint, "user_id <= %s", (20,)) == dataset.all_users()[:20]
