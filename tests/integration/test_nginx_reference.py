"""The nginx ceiling (servers/nginx) as the harness starts and verifies it.

nginx answers from its config, which can express most of the contract but not the
URL-decoding of query values: the verification must fail exactly those checks and pass
every other one, so a change that breaks more (or a verifier that stops noticing) shows.
"""
from __future__ import annotations

import http.client
import json

import psutil
import pytest
import requests

from bench.core import manifest
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra.host import LOCAL
from bench.infra.lifecycle import running_server
from bench.infra.server import log_tail
from bench.verify import verifier
from tests.conftest import TEST_SERVER_PORT

pytestmark = pytest.mark.integration

SPEC = manifest.discover()["nginx"]
SETTINGS = Settings(workers=2, port=TEST_SERVER_PORT)
# what nginx's config cannot do (manifest [notes] not_expressible): decode query values
NOT_EXPRESSIBLE = {"plain decoding", "to_json decoding",
                   "plain plus as space", "to_json plus as space"}


def test_the_manifest_is_a_reference_without_databases():
    assert SPEC.reference and SPEC.databases == () and SPEC.concurrency == "processes"


def test_verification_fails_only_what_nginx_cannot_express(tmp_path):
    log = tmp_path / "nginx.log"
    with running_server(Variant(SPEC, "none", False), SETTINGS, None, log,
                        verifier=verifier(SETTINGS.token)) as running:
        report = running.verification
        pids = running.server.pids()
    failed = {c.name for c in report.checks if not c.passed}
    assert failed == NOT_EXPRESSIBLE, report.summary_text() + "\n" + log_tail(log)
    passed = {c.name for c in report.checks if c.passed}
    assert {"workers", "ping", "token missing", "token wrong", "plain", "to_json",
            "plain missing param", "to_json missing param",
            "user endpoints without database"} <= passed
    # the master and its 2 workers, all gone after the stop
    assert len(pids) == 3
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in pids)
    assert LOCAL.port_is_free(SETTINGS.port, SETTINGS.host)


def test_a_token_with_quotes_backslashes_and_dollars_is_compared_literally(tmp_path):
    token = 'to$ken"with\\odd$1chars'
    settings = Settings(workers=1, port=TEST_SERVER_PORT, token=token)
    with running_server(Variant(SPEC, "none", False), settings, None,
                        tmp_path / "nginx.log") as running:
        url = running.server.base_url + "/plain/?param1=a"
        assert requests.get(url, headers={"token": token}, timeout=5).status_code == 200
        for wrong in ("to", "toxken", token.upper(), token + "x", "to$ken"):
            r = requests.get(url, headers={"token": wrong}, timeout=5)
            assert r.status_code == 401 and r.json() == {"error": "missing or wrong token"}
        # JSON errors even where the location's own type is text/plain
        r = requests.post(url, headers={"token": token}, timeout=5)
        assert (r.status_code, r.headers["Content-Type"], r.headers["Allow"]) == \
            (405, "application/json", "GET, HEAD")


def test_to_json_never_answers_invalid_json(tmp_path):
    with running_server(Variant(SPEC, "none", False), Settings(workers=1, port=TEST_SERVER_PORT),
                        None, tmp_path / "nginx.log") as running:
        base, token = running.server.base_url, {"token": SETTINGS.token}
        r = requests.get(base + "/to_json/?param1=&param3=%22", headers=token, timeout=5)
        assert r.json() == {"param1": "", "param2": None, "param3": "%22"}
        # a raw quote or backslash cannot be escaped by nginx: a JSON 400, not broken JSON
        # (http.client sends the target as written; requests would percent-encode it)
        for raw in ('a"b', "a\\b"):
            conn = http.client.HTTPConnection(SETTINGS.host, SETTINGS.port, timeout=5)
            conn.request("GET", f"/to_json/?param1={raw}", headers=token)
            resp = conn.getresponse()
            assert resp.status == 400 and "error" in json.loads(resp.read()), raw
            conn.close()
