"""--db-mode docker end to end: the compose databases brought up fresh, and every kind of
client the benchmark uses authenticating FIRST against them.

In the images --db-images chooses: the official postgres:15 and mysql:8.4 where a
registry answers, else those built here from Debian's packages (PostgreSQL 15 and
MariaDB, as on this project's CI). What follows is MySQL 8.4's case; on MariaDB the same
tests run with a fresh account of MariaDB's default plugin (mysql_native_password:
MariaDB has no caching_sha2_password and no login cache), so every client still logs in
first on a fresh container.

Why "first": MySQL 8.4's default plugin, caching_sha2_password, lets a login through
on a cheap path only once the server has cached that account, i.e. after one "full
authentication", which without TLS needs an RSA key exchange the client must support.
A client that cannot do it works only when another client happened to log in before
it. So every client here logs in as an account nobody has used since the server
started: a fresh caching_sha2_password account of its own (the RSA path, for
external MySQL servers), and the compose file's `bench` user, which
docker-compose.yml makes a mysql_native_password account so that no ordering or
RSA support matters (checked here too).

Runs where a Docker engine answers (`make test-all` starts one: scripts/docker_engine.sh);
where none does it is skipped, saying so, except under BENCH_DOCKER_TESTS=required (what
scripts/test.sh's `all` tier sets): then it fails. It uses its own compose project and
free ports, so a benchmark's databases are never touched, and tears everything down.
"""
from __future__ import annotations

import asyncio
import os
import socket
import time
from dataclasses import dataclass

import pytest

from bench.core import dataset, manifest
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra import databases, db
from bench.infra.lifecycle import running_server
from bench.infra.server import build, log_tail
from bench.verify import verifier
from tests.conftest import DOCKER, needs_docker

pytestmark = [
    pytest.mark.full,                     # `make test-all` only (axum, a Rust build)
    pytest.mark.integration,
    DOCKER,
    needs_docker(),
]

PROJECT = "webbench-test-docker-mode"     # not the project a benchmark run uses
ROOT_PASSWORD = "bench-root"              # docker-compose.yml's MYSQL_ROOT_PASSWORD


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def compose():
    """Both compose databases, fresh: `docker compose down -v` first, then the
    harness's DockerProvider brings them up; down again at the end."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COMPOSE_PROJECT_NAME", PROJECT)
        prov = databases.DockerProvider(["postgres", "mysql"],
                                        {"postgres": free_port(), "mysql": free_port()})
        down = prov.compose("down", "-v", "--timeout", "10")
        assert down.returncode == 0 and not down.timed_out, down.stderr
        t0 = time.monotonic()
        # the harness's own client (db.py: psycopg, PyMySQL) is the first to log in
        endpoints = prov.start()
        print(f"docker compose up + schema took {time.monotonic() - t0:.1f} s")
        try:
            yield prov, endpoints
        finally:
            assert prov.stop() == []


def mysql_root(ep: db.Endpoint):
    import pymysql
    return pymysql.connect(host=ep.host, port=ep.port, user="root", password=ROOT_PASSWORD,
                           autocommit=True, connect_timeout=5)


def is_mariadb(compose) -> bool:
    return "mariadb" in db.scalar(compose[1]["mysql"], "SELECT VERSION()").lower()


def fresh_sha2_account(compose, name: str) -> db.Endpoint:
    """An account no client has logged in as: on MySQL 8.4 a caching_sha2_password one,
    whose first login is a full authentication; on MariaDB (no such plugin) one of its
    default plugin."""
    ep = compose[1]["mysql"]
    password = f"{name}-pw-1"
    plugin = "mysql_native_password" if is_mariadb(compose) else "caching_sha2_password"
    with mysql_root(ep) as root:
        cur = root.cursor()
        cur.execute(f"CREATE USER '{name}'@'%' IDENTIFIED "
                    + ("" if plugin == "mysql_native_password" else f"WITH {plugin} ")
                    + f"BY '{password}'")
        cur.execute(f"GRANT ALL ON {ep.name}.* TO '{name}'@'%'")
        cur.execute("SELECT plugin FROM mysql.user WHERE user = %s", (name,))
        assert cur.fetchone()[0] == plugin
    return db.Endpoint("mysql", ep.host, ep.port, name, password, ep.name)


def forget_cached_logins(ep: db.Endpoint) -> None:
    """FLUSH PRIVILEGES empties caching_sha2_password's cache: the next login of every
    account is a full authentication again."""
    with mysql_root(ep) as root:
        root.cursor().execute("FLUSH PRIVILEGES")


# ------------------------------------------------------------------ the compose file's set-up

def test_the_bench_user_is_a_mysql_native_password_account(compose):
    _, endpoints = compose
    with mysql_root(endpoints["mysql"]) as root:
        cur = root.cursor()
        cur.execute("SELECT plugin FROM mysql.user WHERE user = 'bench'")
        assert [r[0] for r in cur.fetchall()] == ["mysql_native_password"]


def test_the_harness_logged_in_first_and_filled_both_tables(compose):
    _, endpoints = compose
    for ep in endpoints.values():
        assert db.fetch_users(ep) == dataset.all_users()
    # MySQL skips the /*M! ... */ part of the harness's session SET (MariaDB's only)
    assert db.scalar(endpoints["mysql"], "SELECT @@SESSION.lock_wait_timeout") == \
        int(db.LOCK_TIMEOUT_S)


# ------------------------------------------------------------------ each client, first

def test_harness_db_py_first_login_of_a_fresh_account(compose):
    ep = fresh_sha2_account(compose, "first_harness")
    assert db.scalar(ep, "SELECT COUNT(*) FROM users") == dataset.ROW_COUNT


def test_pymysql_first_login(compose):
    import pymysql
    for ep in (fresh_sha2_account(compose, "first_pymysql"), compose[1]["mysql"]):
        # no TLS, as every benchmark client connects: the RSA exchange or nothing
        with pymysql.connect(host=ep.host, port=ep.port, user=ep.user, password=ep.password,
                             database=ep.name, connect_timeout=5) as conn:
            cur = conn.cursor()
            cur.execute("SELECT COUNT(*) FROM users")
            assert cur.fetchone()[0] == dataset.ROW_COUNT


def test_aiomysql_first_login(compose):
    import aiomysql

    async def count(ep: db.Endpoint) -> int:
        conn = await aiomysql.connect(host=ep.host, port=ep.port, user=ep.user,
                                      password=ep.password, db=ep.name, connect_timeout=5)
        try:
            async with conn.cursor() as cur:
                await cur.execute("SELECT COUNT(*) FROM users")
                return (await cur.fetchone())[0]
        finally:
            conn.close()

    for ep in (fresh_sha2_account(compose, "first_aiomysql"), compose[1]["mysql"]):
        assert asyncio.run(count(ep)) == dataset.ROW_COUNT


def test_asyncpg_and_psycopg_login(compose):
    """PostgreSQL has no login cache (scram-sha-256 every time); both drivers must speak
    it against the image's pg_hba."""
    import asyncpg
    import psycopg
    ep = compose[1]["postgres"]

    async def count() -> int:
        conn = await asyncpg.connect(host=ep.host, port=ep.port, user=ep.user,
                                     password=ep.password, database=ep.name, timeout=5)
        try:
            return await conn.fetchval("SELECT COUNT(*) FROM users")
        finally:
            await conn.close()

    assert asyncio.run(count()) == dataset.ROW_COUNT
    with psycopg.connect(host=ep.host, port=ep.port, user=ep.user, password=ep.password,
                         dbname=ep.name, connect_timeout=5) as conn:
        assert conn.execute("SELECT COUNT(*) FROM users").fetchone()[0] == dataset.ROW_COUNT


# ------------------------------------------------------------------ a Rust server (sqlx)

RUST_SETTINGS = Settings(workers=2, db_connections=4, port=free_port())


@dataclass
class Flushed:
    """What running_server's settle step records (it reads `.seconds`)."""
    seconds: float


@pytest.fixture(scope="module")
def axum(tmp_path_factory):
    spec = manifest.discover()["axum"]
    build(spec, RUST_SETTINGS, tmp_path_factory.mktemp("build") / "build-axum.log")
    return spec


@pytest.mark.parametrize("engine", ["mysql", "postgres"])
def test_a_rust_server_logs_in_first_and_honours_the_contract(compose, axum, engine, tmp_path):
    """sqlx opens its whole pool at start-up: a login it cannot do stops the server from
    becoming ready. For MySQL the account is fresh and its cache is emptied after the
    harness's restore (running_server's settle step), so sqlx's logins are first."""
    if engine == "mysql":
        endpoint = fresh_sha2_account(compose, "first_sqlx")

        def settle_db():
            t0 = time.monotonic()
            forget_cached_logins(endpoint)
            return Flushed(time.monotonic() - t0)
    else:
        endpoint, settle_db = compose[1]["postgres"], None
    log = tmp_path / "server.log"
    with running_server(Variant(axum, engine, False), RUST_SETTINGS, endpoint, log,
                        verifier=verifier(RUST_SETTINGS.token), settle_db=settle_db) as running:
        report = running.verification
    assert report.passed, report.summary_text() + "\n" + log_tail(log)


# ------------------------------------------------------------------ a container that dies

@pytest.mark.parametrize("engine", ["mysql", "postgres"])
def test_a_killed_container_is_noticed_and_restarted_fresh(compose, engine):
    prov, endpoints = compose
    ep = endpoints[engine]
    assert prov.alive(engine)
    killed = prov.compose("kill", prov.services[engine])
    assert killed.returncode == 0, killed.stderr
    assert not prov.alive(engine)
    t0 = time.monotonic()
    assert prov.restart(engine) == ep
    print(f"{engine}: docker restart took {time.monotonic() - t0:.1f} s")
    assert prov.alive(engine)
    # a fresh container: the harness logged in first again and filled the table
    assert db.fetch_users(ep) == dataset.all_users()
    if engine == "mysql":
        test_the_bench_user_is_a_mysql_native_password_account(compose)
    assert os.environ.get("COMPOSE_PROJECT_NAME") == PROJECT


# ------------------------------------------------------------------ the database's figures

@pytest.mark.parametrize("engine", ["postgres", "mysql"])
def test_the_databases_processes_and_sockets_are_read_from_its_container(compose, engine):
    """The same figures as local mode: the container's processes (its cgroup) and its
    shim, as pids of this machine, and the TCP sockets they hold (on the host's network,
    as docker-compose.yml runs them: no userland proxy between client and database)."""
    import psutil
    from bench.infra.host import LOCAL
    prov, endpoints = compose
    with db.connect(endpoints[engine]):              # one client connection held open
        pids = prov.pids(engine)
        names = {psutil.Process(pid).name() for pid in pids}
        assert any(n.startswith("containerd-shim") for n in names), names
        server = {"postgres": "postgres", "mysql": "mariadbd" if is_mariadb(compose)
                  else "mysqld"}[engine]
        assert server in names, names
        assert not [p for p in psutil.process_iter(["name"])
                    if p.info["name"] == "docker-proxy"]
        found = LOCAL.socket_memory({"database": list(LOCAL.processes(pids).values())})
    # the listening socket and the database's end of the client's connection
    assert found["database"][1] >= 2, found
