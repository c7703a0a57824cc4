"""Provisioning and restoring against real PostgreSQL and MariaDB servers."""
import socket

import pytest

from bench.core import dataset
from bench.infra import databases as provision, db
from bench.infra.settle import settle

pytestmark = pytest.mark.integration


def test_restore_gives_exactly_the_contract_rows(endpoint):
    db.restore(endpoint)
    assert db.fetch_users(endpoint) == dataset.all_users()


def test_restore_after_updates_deletes_and_inserts(endpoint):
    with db.connect(endpoint) as conn:
        cur = conn.cursor()
        cur.execute("UPDATE users SET username = %s, email = NULL WHERE user_id <= 500", ("x",))
        cur.execute("DELETE FROM users WHERE user_id > 9000")
        cur.execute("INSERT INTO users (username, created_at, updated_at) "
                    "VALUES ('intruder', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)")
    assert db.scalar(endpoint, "SELECT COUNT(*) FROM users") == 9001
    seconds = db.restore(endpoint)
    assert db.fetch_users(endpoint) == dataset.all_users()
    print(f"{endpoint.engine} restore took {seconds * 1000:.0f} ms")


def test_identity_continues_after_restore(endpoint):
    db.restore(endpoint)
    with db.connect(endpoint) as conn:
        cur = conn.cursor()
        cur.execute("INSERT INTO users (username, created_at, updated_at) "
                    "VALUES ('next', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)")
    assert db.scalar(endpoint, "SELECT MAX(user_id) FROM users") == 10_001
    db.restore(endpoint)


def test_busy_port_is_named(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        server = provision.LocalServer("postgres", port, tmp_path)
        with pytest.raises(provision.ProvisionError, match=f"port {port} .* is busy"):
            server.start()


def test_external_mode_uses_a_dsn(databases):
    pg = databases["postgres"]
    prov = provision.provider("external", ["postgres"], dsns={
        "postgres": f"postgresql://{pg.user}:{pg.password}@{pg.host}:{pg.port}/{pg.name}"})
    endpoints = prov.start()
    assert endpoints["postgres"] == pg
    assert db.scalar(pg, "SELECT COUNT(*) FROM users") == dataset.ROW_COUNT


def test_external_mode_without_dsn_says_which_flag():
    with pytest.raises(provision.ProvisionError, match="--mysql-dsn / BENCH_MYSQL_DSN"):
        provision.provider("external", ["mysql"], dsns={}).start()


def test_missing_server_binaries_say_how_to_install_them(monkeypatch, tmp_path):
    monkeypatch.delenv("BENCH_PG_BINDIR", raising=False)
    monkeypatch.setattr(provision.glob, "glob", lambda pattern: [])
    monkeypatch.setattr(provision.shutil, "which", lambda name: None)
    monkeypatch.setattr(provision.os, "access", lambda path, mode: False)
    with pytest.raises(provision.ProvisionError, match="apt-get install postgresql"):
        provision.postgres_bindir()
    with pytest.raises(provision.ProvisionError, match="apt-get install mariadb-server"):
        provision.LocalServer("mysql", 1, tmp_path)._mysqld()


def test_settle_leaves_the_database_idle_before_the_next_sample(endpoint, database_provider):
    """The work an `update user` sample and a restore leave behind (dirty pages, old row
    versions) is done before the next sample, and the wait is measured."""
    provider, _ = database_provider
    with db.connect(endpoint) as conn:
        conn.cursor().execute("UPDATE users SET username = CONCAT(username, 'x')")
    db.restore(endpoint)
    done = settle(endpoint, lambda: provider.pids(endpoint.engine))
    print(done.as_dict())
    assert done.quiet and done.steps[-1] == "CPU idle", done.steps
    # the local servers give the harness the rights to flush: PostgreSQL's CHECKPOINT;
    # MariaDB's purge wait needs a privilege the bench user lacks, and says so
    assert done.steps[0] == "checkpoint" if endpoint.engine == "postgres" \
        else done.steps[0].startswith("InnoDB purge")
    assert 0 < done.seconds < 30
    assert settle(endpoint, None).steps[-1] == "database processes not visible: no CPU wait"
