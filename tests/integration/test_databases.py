"""Provisioning and restoring against real PostgreSQL and MariaDB servers: starting,
stopping whatever is left of a server, noticing a dead one and restarting it, bounded
lock waits, and no password in any message."""
import contextlib
import glob
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
import traceback
from pathlib import Path

import psutil
import pytest

from bench.core import dataset
from bench.infra import databases as provision, db
from bench.infra.host import LOCAL
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
        server = provision.ThrowawayServer("postgres", port, tmp_path)
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
    monkeypatch.setattr(glob, "glob", lambda pattern: [])
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(provision.ProvisionError, match="apt-get install postgresql"):
        provision.postgres_bindir()
    with pytest.raises(provision.ProvisionError, match="apt-get install mariadb-server"):
        provision.mariadb.binaries(LOCAL)


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


# ------------------------------------------------------------------ stopping for real

def free_port() -> int:
    """A port nobody listens on, chosen by the kernel: the servers these tests kill and
    restart are their own, so they must not take a fixed port another run may use."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def own_provider(request):
    """A provider of one engine of its own, on a free port; whatever a test leaves of
    it is stopped at the end (and must stop cleanly)."""
    engine = request.param
    prov = provision.ThrowawayProvider([engine], {engine: free_port()})
    endpoints = prov.start()
    yield prov, endpoints[engine]
    assert prov.stop() == []


def gone(proc: psutil.Process) -> bool:
    """Exited (a zombie waiting for whichever process adopted it to reap it counts)."""
    return not provision.process_live(proc)


def assert_gone(prov, port):
    """Nothing of the server is left, its port is free and the temp folder is gone."""
    assert provision.server_processes_in([prov.root]) == []
    assert LOCAL.port_is_free(port), provision.port_listeners(port)
    assert not prov.root.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="only root starts PostgreSQL through a "
                    "`runuser` wrapper; as another user the spawned process is the server")
@pytest.mark.parametrize("own_provider", ["postgres"], indirect=True)
def test_stop_finds_postgres_after_its_runuser_wrapper_was_killed(own_provider):
    """The reproduced bug: the wrapper dies, stop() returned at once, deleted the data
    folder under the live postmaster, and PostgreSQL kept listening."""
    prov, ep = own_provider
    server = prov.server("postgres")
    assert psutil.Process(server.proc.pid).name() == "runuser"
    postmaster = server.main_process()
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(timeout=5)
    assert postmaster.is_running() and prov.alive("postgres")   # the server lives on
    t0 = time.monotonic()
    assert prov.stop() == []
    print(f"stop without the wrapper took {time.monotonic() - t0:.2f} s")
    assert gone(postmaster)
    assert_gone(prov, ep.port)


@pytest.mark.parametrize("own_provider", ["postgres", "mysql"], indirect=True)
def test_stop_needs_only_the_folder_not_the_spawned_process(own_provider):
    """A ThrowawayServer that never held the server's process (as after a harness restart)
    still stops it: from the pid file / the processes of the data folder."""
    prov, ep = own_provider
    server = prov.server(ep.engine)
    main = server.main_process()
    stranger = provision.ThrowawayServer(ep.engine, ep.port, prov.root)
    stranger.spawned = True          # it does not know the process, only the folder
    assert stranger.main_process().pid == main.pid
    assert stranger.stop() == []
    assert gone(main) and LOCAL.port_is_free(ep.port)
    server.proc.wait(timeout=5)
    assert prov.stop() == []
    assert_gone(prov, ep.port)


@pytest.mark.parametrize("own_provider", ["postgres", "mysql"], indirect=True)
def test_stop_kills_a_server_that_ignores_its_shutdown_signal(own_provider, monkeypatch):
    prov, ep = own_provider
    server = prov.server(ep.engine)
    main = server.main_process()
    main.suspend()                   # SIGSTOP: the shutdown signal stays pending
    monkeypatch.setattr(provision.throwaway, "STOP_TIMEOUT_S", 1.0)
    t0 = time.monotonic()
    assert prov.stop() == []
    took = time.monotonic() - t0
    print(f"{ep.engine}: stop of a stopped (SIGSTOP) server took {took:.2f} s")
    assert 1.0 <= took < 1.0 + provision.KILL_TIMEOUT_S + provision.PORT_FREE_TIMEOUT_S
    assert_gone(prov, ep.port)


def test_the_folder_is_kept_while_a_server_process_still_uses_it(monkeypatch):
    """If a server process survives everything, its folder is not deleted under it."""
    prov = provision.ThrowawayProvider(["postgres"], {"postgres": free_port()})
    ep = prov.start()["postgres"]
    server = prov.server("postgres")
    main = server.main_process()
    # a stop() that cannot get rid of the server (as if SIGKILL did not take)
    monkeypatch.setattr(server, "stop", lambda: [])
    try:
        problems = prov.stop()
        assert any("still use" in p and str(main.pid) in p for p in problems), problems
        assert prov.root.exists() and (prov.root / "pg" / "postmaster.pid").exists()
        assert main.is_running() and db.accepts_connection(ep)
    finally:
        monkeypatch.undo()
        assert server.stop() == []
        shutil.rmtree(prov.root)


# ------------------------------------------------------------------ alive and restart

@pytest.mark.parametrize("own_provider", ["postgres", "mysql"], indirect=True)
def test_a_dead_database_is_noticed_and_restarted_on_the_same_port(own_provider):
    prov, ep = own_provider
    assert prov.alive(ep.engine)
    t0 = time.monotonic()
    assert prov.alive(ep.engine)
    print(f"{ep.engine}: alive() on a live server took {time.monotonic() - t0:.3f} s")
    with db.connect(ep) as conn:
        conn.cursor().execute("DELETE FROM users WHERE user_id > 100")
    old = prov.server(ep.engine)
    old.main_process().kill()        # dies mid-run, as an OOM kill would do it
    t0 = time.monotonic()
    assert not prov.alive(ep.engine)
    print(f"{ep.engine}: alive() on a dead server took {time.monotonic() - t0:.3f} s")
    t0 = time.monotonic()
    again = prov.restart(ep.engine)
    print(f"{ep.engine}: restart took {time.monotonic() - t0:.2f} s")
    assert again == ep                               # same port, same credentials
    assert prov.server(ep.engine) is not old and prov.alive(ep.engine)
    assert db.fetch_users(ep) == dataset.all_users()   # table and seed set up afresh
    # tens of ms; the bound: a connect up to its own timeout, plus slack for a busy machine
    assert db.restore(ep) < db.CONNECT_TIMEOUT_S + 3


@pytest.mark.parametrize("own_provider", ["postgres"], indirect=True)
def test_restart_of_a_live_server_stops_it_first(own_provider):
    prov, ep = own_provider
    old_main = prov.server("postgres").main_process()
    assert prov.restart("postgres") == ep
    assert gone(old_main)
    assert prov.alive("postgres") and db.scalar(ep, "SELECT COUNT(*) FROM users") == 10_000


def test_external_alive_and_restart(databases):
    pg = databases["postgres"]
    prov = provision.provider("external", ["postgres"], dsns={
        "postgres": f"postgresql://{pg.user}:{pg.password}@{pg.host}:{pg.port}/{pg.name}"})
    prov.start()
    assert prov.alive("postgres")
    with pytest.raises(provision.ProvisionError,
                       match="an external database cannot be restarted by the harness"):
        prov.restart("postgres")
    closed = provision.ExternalProvider(["postgres"], {})
    closed.endpoints["postgres"] = db.Endpoint("postgres", "127.0.0.1", free_port(), "u", "p")
    t0 = time.monotonic()
    assert not closed.alive("postgres")
    # refused at once; at worst alive()'s own connect timeout, plus slack for a busy machine
    assert time.monotonic() - t0 < provision.ALIVE_TIMEOUT_S + 3


# ------------------------------------------------------------------ bounded waits

def test_initdb_that_hangs_is_stopped_and_named(monkeypatch):
    monkeypatch.setattr(provision.throwaway, "INIT_TIMEOUT_S", 0.05)   # initdb takes about a second
    root = Path(tempfile.mkdtemp(prefix="webbench-db-test-"))  # reachable by `postgres`
    root.chmod(0o755)
    try:
        server = provision.ThrowawayServer("postgres", free_port(), root)
        t0 = time.monotonic()
        with pytest.raises(provision.ProvisionError, match="initdb did not finish within 0.05 s"):
            server.start()
        assert time.monotonic() - t0 < 10
        assert server.stop() == []       # nothing was spawned: nothing to stop
        assert provision.server_processes_in([root]) == []
    finally:
        shutil.rmtree(root)


# ------------------------------------------------------------------ locks cannot hang a restore

def hold_users_lock(ep):
    """Another session in an open transaction holding row locks on `users` (what a
    server stuck mid-transaction does); TRUNCATE then has to wait for it."""
    if ep.engine == "postgres":
        import psycopg
        conn = psycopg.connect(host=ep.host, port=ep.port, user=ep.user,
                               password=ep.password, dbname=ep.name,
                               application_name="lock-holder")
        conn.execute("SELECT * FROM users WHERE user_id <= 10 FOR UPDATE").fetchall()
        return conn, str(conn.info.backend_pid)
    import pymysql
    conn = pymysql.connect(host=ep.host, port=ep.port, user=ep.user, password=ep.password,
                           database=ep.name)
    cur = conn.cursor()
    cur.execute("BEGIN")
    cur.execute("SELECT * FROM users WHERE user_id <= 10 FOR UPDATE")
    cur.fetchall()
    return conn, str(conn.thread_id())


def truncate_waits(ep) -> bool:
    """Whether a session's TRUNCATE of `users` is waiting for a lock now."""
    if ep.engine == "postgres":
        sql = ("SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
               "AND upper(left(query, 8)) = 'TRUNCATE'")
    else:
        sql = ("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
               "WHERE UPPER(LEFT(INFO, 8)) = 'TRUNCATE' AND LOCATE('lock', STATE) > 0")
    return db.scalar(ep, sql) > 0


def test_restore_gives_up_when_another_session_holds_users(endpoint):
    holder, holder_id = hold_users_lock(endpoint)
    try:
        t0 = time.monotonic()
        with pytest.raises(db.RestoreBlocked) as caught:
            db.restore(endpoint, lock_timeout_s=1, statement_timeout_s=10)
        took = time.monotonic() - t0
        message = str(caught.value)
        print(f"{endpoint.engine}: gave up after {took:.2f} s: {message}")
        # the 1 s lock timeout, not the 10 s statement one: the connect (up to its own
        # timeout) plus the lock wait plus slack for a busy machine stays below 10 s
        assert took < db.CONNECT_TIMEOUT_S + 1 + 3
        assert "the table was locked by another session" in message
        assert holder_id in message               # the database named the holder
        if endpoint.engine == "postgres":
            assert "lock-holder" in message
    finally:
        holder.rollback()
        holder.close()
    db.restore(endpoint)
    assert db.scalar(endpoint, "SELECT COUNT(*) FROM users") == dataset.ROW_COUNT


def test_harness_sessions_carry_the_timeouts(endpoint):
    with db.connect(endpoint, lock_timeout_s=3, statement_timeout_s=7) as conn:
        cur = conn.cursor()
        if endpoint.engine == "postgres":
            cur.execute("SELECT current_setting('lock_timeout'), "
                        "current_setting('statement_timeout')")
            assert cur.fetchone() == ("3s", "7s")
        else:
            cur.execute("SELECT @@SESSION.lock_wait_timeout, @@SESSION.innodb_lock_wait_timeout,"
                        " @@SESSION.max_statement_time")
            assert tuple(float(v) for v in cur.fetchone()) == (3, 3, 7)


# ------------------------------------------------------------------ no password in any message

SECRET = "Sup3r-s3cret@pw"                       # "@" must survive the URL parsing too
SECRET_IN_URL = "Sup3r-s3cret%40pw"


def everything_said(exc: BaseException) -> str:
    """The exception as a log would show it: message, repr, the whole chained traceback."""
    return "".join(traceback.format_exception(exc)) + repr(exc)


def test_no_password_in_connection_errors(databases):
    my = databases["mysql"]
    # a wrong password against the real MariaDB: the driver's error, redacted
    wrong = f"mysql://{my.user}:{SECRET_IN_URL}@{my.host}:{my.port}/{my.name}"
    prov = provision.ExternalProvider(["mysql"], {"mysql": wrong}, wait_s=0.5)
    with pytest.raises(provision.ProvisionError) as caught:
        prov.start()
    said = everything_said(caught.value)
    assert "Access denied" in said
    # nothing listening: psycopg's error
    closed = f"postgresql://bench:{SECRET_IN_URL}@127.0.0.1:{free_port()}/x"
    with pytest.raises(provision.ProvisionError) as caught2:
        provision.ExternalProvider(["postgres"], {"postgres": closed}, wait_s=0.5).start()
    said += everything_said(caught2.value)
    # malformed DSNs are quoted back, redacted
    for dsn in (f"postgresql://bench:{SECRET_IN_URL}@/nohost",
                f"postgresql://bench:{SECRET_IN_URL}@h:notaport/db"):
        with pytest.raises(provision.ProvisionError) as caught3:
            provision.ExternalProvider(["postgres"], {"postgres": dsn}, wait_s=0.5).start()
        said += everything_said(caught3.value)
        assert "bench:***@" in str(caught3.value)
    # the driver's own error, straight from db.connect
    ep = db.endpoint_from_dsn("mysql", wrong)
    with pytest.raises(db.ConnectError) as caught4:
        db.connect(ep)
    said += everything_said(caught4.value) + repr(ep) + str(ep.public())
    for secret in (SECRET, SECRET_IN_URL):
        assert secret not in said, said


def test_redact_covers_urls_keywords_and_known_secrets():
    assert db.redact(f"postgresql://u:{SECRET}@h:1/db") == "postgresql://u:***@h:1/db"
    assert db.redact(f"host=h password='{SECRET}' user=u") == "host=h password=*** user=u"
    assert db.redact(f"it said {SECRET}", SECRET) == "it said ***"
    assert db.redact("mysql://u@h/db") == "mysql://u@h/db"


@pytest.mark.parametrize("own_provider", ["postgres", "mysql"], indirect=True)
def test_restore_gives_up_on_a_server_that_stops_answering(own_provider, monkeypatch):
    """A frozen server (SIGSTOP: not dead, its kernel still takes the bytes) enforces
    none of its own timeouts; the harness stops waiting by itself."""
    prov, ep = own_provider
    monkeypatch.setattr(db, "CLIENT_MARGIN_S", 0.5)
    holder, _ = hold_users_lock(ep)      # TRUNCATE waits: time to freeze the server
    frozen = []

    restoring = threading.Event()

    def freeze():
        # frozen once the restore's TRUNCATE waits for the lock (connected, its timeouts
        # set): the bounds it then runs out of are the server's own, never enforced
        while not restoring.is_set() and not truncate_waits(ep):
            time.sleep(0.02)
        if restoring.is_set():
            return
        for pid in prov.pids(ep.engine):
            try:          # the backend of truncate_waits' own session may be exiting
                proc = psutil.Process(pid)
                proc.suspend()
            except psutil.NoSuchProcess:
                continue
            frozen.append(proc)
    freezer = threading.Thread(target=freeze)
    freezer.start()
    try:
        t0 = time.monotonic()
        try:
            # the server's own statement timeout (5 s) must not fire before the freezer has
            # stopped it (a busy machine can delay the freezer by seconds); the lock wait,
            # longer still, never does
            with pytest.raises(db.RestoreBlocked, match="got no answer within 5.5 s") as caught:
                db.restore(ep, lock_timeout_s=30, statement_timeout_s=5)
        finally:
            restoring.set()
        took = time.monotonic() - t0
        print(f"{ep.engine}: {took:.2f} s: {caught.value}")
        # the answer bound (5 + 0.5) counts from after the connect, which may take up to
        # its own timeout; plus slack for a busy machine
        assert 5.5 <= took < 5.5 + db.CONNECT_TIMEOUT_S + 3
    finally:
        freezer.join()
        for proc in frozen:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.resume()
        holder.close()
    # the wrapper (runuser) stopped itself when its child was stopped: stop() is not
    # held up by it; continued, it exits with the server (held up, it would be killed)
    wrapper = prov.server(ep.engine).proc
    t0 = time.monotonic()
    assert prov.stop() == []
    took = time.monotonic() - t0
    print(f"{ep.engine}: stop after the freeze took {took:.2f} s, "
          f"wrapper exit {wrapper.returncode}")
    assert wrapper.returncode is not None and wrapper.returncode != -signal.SIGKILL
    assert took < provision.STOP_TIMEOUT_S
    assert_gone(prov, ep.port)
