"""Shared fixtures: real throwaway PostgreSQL and MariaDB servers, started once per session
(once per pytest-xdist worker: each worker has its own databases on its own ports).

Tests use their own ports (not the harness defaults), so a `make bench` running on the
same machine is never disturbed; each xdist worker shifts them by WORKER_PORT_STEP, as
pytest-postgresql gives each worker a port of its own; so are the ports the e2e tests
give the harness (E2E_*). The tests on the network-namespace test bed, whose names are
fixed, share one xdist group (they run one after another on one worker).
"""
from __future__ import annotations

import copy
import functools
import hashlib
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.infra import databases as provision  # noqa: E402



def _worker_index() -> int:
    """0 without xdist, N on its worker gwN."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "")
    return int(name[2:]) if name.startswith("gw") and name[2:].isdigit() else 0


# 10 apart, each role's base at another offset within the 10: no two workers share a port
WORKER_PORT_STEP = 10
WORKER_OFFSET = _worker_index() * WORKER_PORT_STEP
TEST_PORTS = {"postgres": int(os.environ.get("BENCH_TEST_PG_PORT", 16432)) + WORKER_OFFSET,
              "mysql": int(os.environ.get("BENCH_TEST_MYSQL_PORT", 14306)) + WORKER_OFFSET}
TEST_SERVER_PORT = int(os.environ.get("BENCH_TEST_SERVER_PORT", 19080)) + WORKER_OFFSET
# the harness's --port (its +1: a proxied server's upstream), --pg-port, --mysql-port in
# the e2e tests
E2E_PORT = 19081 + WORKER_OFFSET
E2E_PG_PORT = 16433 + WORKER_OFFSET
E2E_MYSQL_PORT = 14307 + WORKER_OFFSET
# the xdist group of the tests on the network-namespace test bed (tests/netns: one bed
# of fixed names and addresses per machine)
NETNS = pytest.mark.xdist_group("netns")
# the xdist group of the tests that use the Docker engine: one worker runs them one after
# another (one of them stops and starts the engine; image builds are the engine's to share)
DOCKER = pytest.mark.xdist_group("docker")


@functools.lru_cache(maxsize=1)
def docker_engine():
    from bench.infra.containers import engine
    return engine.engine_state()


def needs_docker():
    """A mark for the tests that need a Docker engine: skipped where none answers, saying
    so, but failed when BENCH_DOCKER_TESTS=required (scripts/test.sh's `all` tier, which
    starts an engine: there a Docker test that does not run is a failure, not a skip)."""
    if docker_engine().answers:
        return pytest.mark.skipif(False, reason="a Docker engine answers")
    if os.environ.get("BENCH_DOCKER_TESTS") == "required":
        return pytest.mark.usefixtures("docker_required_but_missing")
    return pytest.mark.skip(reason=f"no Docker engine: {docker_engine().why}")


@pytest.fixture
def docker_required_but_missing():
    pytest.fail(f"BENCH_DOCKER_TESTS=required, but {docker_engine().why}")


def selected_servers(specs: dict) -> dict:
    """The servers whose per-server checks (contract, fuzzing) this run makes:
    BENCH_TEST_SERVERS is `all` (or unset: a bare `pytest` checks everything), or a comma
    list the Makefile's tiers get from bench/cli/changed.py, possibly empty."""
    raw = os.environ.get("BENCH_TEST_SERVERS", "all").strip()
    if raw == "all":
        return dict(specs)
    wanted = [s.strip() for s in raw.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in specs]
    if unknown:
        raise pytest.UsageError(f"BENCH_TEST_SERVERS names unknown servers: {unknown}")
    return {s: specs[s] for s in wanted}


def pytest_collection_modifyitems(config, items):
    """A per-server check whose selection is empty (`make test` when no server's files
    changed) is deselected, not reported as skipped: nothing was left unchecked that
    this tier asks for, and a skip in the summary should mean one."""
    empty = [item for item in items if item.get_closest_marker("server_checks")
             and any(str(m.kwargs.get("reason", "")).startswith("got empty parameter set")
                     for m in item.iter_markers("skip"))]
    if empty:
        config.hook.pytest_deselected(items=empty)
        items[:] = [item for item in items if item not in empty]


@pytest.fixture(autouse=True)
def _coverage_of_this_test(request, monkeypatch):
    """COVERAGE=by-test (scripts/test.sh): every Python process this test starts writes
    its coverage data under a folder named after the test, so that what a tier would
    lose without a test can be computed from one run (scripts/coverage_by_test.py); the
    test's own in-process lines carry its name as coverage's dynamic context."""
    root = os.environ.get("BENCH_COVERAGE_BY_TEST")
    if root:
        nodeid = request.node.nodeid
        slug = "".join(c if c.isalnum() or c in "._-" else "_" for c in nodeid)[:120]
        folder = Path(root) / f"{slug}-{hashlib.sha1(nodeid.encode()).hexdigest()[:8]}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "nodeid").write_text(nodeid)
        # a started process reads coverage's configuration from this variable, which
        # coverage.py sets once per session (its data file is not read from COVERAGE_FILE)
        import coverage
        running = coverage.Coverage.current()
        if running is not None:
            config = copy.copy(running.config)
            config.data_file = str(folder / "coverage")
            monkeypatch.setenv("COVERAGE_PROCESS_CONFIG", config.serialize())
    yield


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
def builder(tmp_path_factory):
    """builder(spec): the server's build step, as a run does it, the first time a test of
    this session needs that server (lazily: a tier that checks gin builds no Rust)."""
    from bench.core.settings import Settings
    from bench.infra.server import build
    logs = tmp_path_factory.mktemp("builds")
    done: set[str] = set()

    def ensure(spec) -> None:
        if spec.id not in done:
            build(spec, Settings(), logs / f"build-{spec.id}.log")
            done.add(spec.id)
    return ensure


@pytest.fixture
def built(request, builder):
    """The parametrised `variant`'s server, built (see `builder`)."""
    callspec = getattr(request.node, "callspec", None)
    variant = callspec.params.get("variant") if callspec else None
    if variant is None:
        raise pytest.UsageError(f"{request.node.nodeid}: `built` needs a `variant` parameter")
    builder(variant.server)
    return True
