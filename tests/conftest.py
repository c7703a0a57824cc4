"""Shared fixtures: real throwaway PostgreSQL and MariaDB servers, started once per session.

Tests use their own ports (not the harness defaults), so a `make bench` running on the
same machine is never disturbed.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.infra import databases as provision  # noqa: E402

TEST_PORTS = {"postgres": int(os.environ.get("BENCH_TEST_PG_PORT", 16432)),
              "mysql": int(os.environ.get("BENCH_TEST_MYSQL_PORT", 14306))}
TEST_SERVER_PORT = int(os.environ.get("BENCH_TEST_SERVER_PORT", 19080))


@pytest.fixture(scope="session")
def database_provider():
    """Two real database servers (PostgreSQL, MariaDB) with the contract's table."""
    provider = provision.ThrowawayProvider(["postgres", "mysql"], TEST_PORTS)
    endpoints = provider.start()
    yield provider, endpoints
    provider.stop()


@pytest.fixture(scope="session")
def databases(database_provider):
    """{engine: Endpoint} of the session's database servers."""
    return database_provider[1]


@pytest.fixture(params=["postgres", "mysql"])
def endpoint(request, databases):
    return databases[request.param]


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """Every server's build step, as a run does it (cheap when nothing changed), once per
    session for every test that starts real servers."""
    from bench.core import manifest
    from bench.core.settings import Settings
    from bench.infra.server import build
    logs = tmp_path_factory.mktemp("builds")
    for spec in manifest.discover().values():
        build(spec, Settings(), logs / f"build-{spec.id}.log")
    return True
