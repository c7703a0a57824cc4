"""Talking to a provisioned database: connect, create the contract's table, restore it.

Where the databases come from (local throwaway servers, Docker, existing ones) is
`bench.infra.databases`' job; this module only needs an endpoint.

Every session the harness opens is bounded: a lock wait and a statement both time out
(`LOCK_TIMEOUT_S`, `STATEMENT_TIMEOUT_S`), so a session that holds `users` locked (a
server's open transaction, someone's psql) makes a restore fail with a message naming
that session instead of hanging an unattended run. No message raised from here carries
a password or a DSN.
"""
from __future__ import annotations

import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from urllib.parse import unquote, urlsplit

from bench.core import dataset

# How long a harness statement may wait for a lock (TRUNCATE needs PostgreSQL's ACCESS
# EXCLUSIVE lock / MariaDB's exclusive metadata lock on `users`) and run at all. A
# restore takes tens of milliseconds: these only ever fire when something is wrong.
LOCK_TIMEOUT_S = 10.0
STATEMENT_TIMEOUT_S = 60.0
CONNECT_TIMEOUT_S = 5.0
# Past the statement bound, the harness stops waiting for an answer itself: a server
# that is frozen (not dead: its kernel still accepts the bytes) enforces no timeout.
CLIENT_MARGIN_S = 30.0


class DatabaseError(RuntimeError):
    """A harness database operation failed. The message never contains a password."""


class ConnectError(DatabaseError):
    """The database did not accept the harness's connection."""


class RestoreBlocked(DatabaseError):
    """A restore gave up: another session held `users` locked, or it ran out of time."""


@dataclass(frozen=True)
class Endpoint:
    engine: str            # "postgres" | "mysql"
    host: str
    port: int
    user: str
    password: str = field(repr=False)   # never in a repr, a log line or a traceback
    name: str = dataset.DATABASE_NAME

    def public(self) -> dict:
        """What goes into results.json: everything but the password."""
        d = asdict(self)
        d.pop("password")
        return d

    def where(self) -> str:
        """How messages name this database: engine, address, database; no credentials."""
        return f"{self.engine} at {self.host}:{self.port}/{self.name}"

    def server_env(self) -> dict[str, str]:
        return {
            "BENCH_DB_HOST": self.host,
            "BENCH_DB_PORT": str(self.port),
            "BENCH_DB_NAME": self.name,
            "BENCH_DB_USER": self.user,
            "BENCH_DB_PASSWORD": self.password,
        }


# ------------------------------------------------------------------ secrets out of text

# greedy up to the netloc's last "@", as urlsplit reads it: a password may contain "@"
_URL_CREDENTIALS = re.compile(r"(\b[a-zA-Z][\w+.-]*://[^:/@\s]*:)[^\s/]*@")
_KEYWORD_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)


def redact(text: str, *secrets: str | None) -> str:
    """`text` without the passwords in any URL (`scheme://user:***@host`), in libpq
    keyword form (`password=***`), or anywhere else as one of `secrets`."""
    text = _URL_CREDENTIALS.sub(r"\1***@", text)
    text = _KEYWORD_PASSWORD.sub(r"\1***", text)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return text


def redact_dsn(dsn: str) -> str:
    """A DSN as it may be shown: scheme, user, host, port and database, no password."""
    return redact(dsn)


def _secrets(ep: Endpoint) -> tuple[str, ...]:
    # A password equal to the user name is shown with every user name anyway; masking
    # it would only mangle "user bench" and "webservers_bench" in every message.
    return (ep.password,) if ep.password and ep.password != ep.user else ()


def _describe(exc: BaseException, ep: Endpoint) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return redact(text, *_secrets(ep))


def endpoint_from_dsn(engine: str, dsn: str) -> Endpoint:
    """`postgresql://user:pw@host:port/db` or `mysql://user:pw@host:port/db`."""
    try:
        parts = urlsplit(dsn)
        port = parts.port
    except ValueError as exc:     # e.g. a port that is not a number
        raise ValueError(f"{engine} DSN {redact_dsn(dsn)} is malformed ({exc}); expected "
                         f"scheme://user:pw@host:port/db") from None
    if not parts.hostname:
        raise ValueError(f"{engine} DSN {redact_dsn(dsn)} has no host "
                         f"(expected scheme://user:pw@host:port/db)")
    default_port = 5432 if engine == "postgres" else 3306
    return Endpoint(
        engine=engine,
        host=parts.hostname,
        port=port or default_port,
        user=unquote(parts.username or "bench"),
        password=unquote(parts.password or ""),
        name=parts.path.lstrip("/") or dataset.DATABASE_NAME,
    )


# PostgreSQL sessions the harness opens carry this name, so that counting a server's
# connections (`server_connections`) leaves the harness's own out.
HARNESS_APPLICATION = "webbench-harness"


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def connect(ep: Endpoint, *, database: str | None = None, autocommit: bool = True,
            lock_timeout_s: float = LOCK_TIMEOUT_S,
            statement_timeout_s: float = STATEMENT_TIMEOUT_S,
            connect_timeout_s: float = CONNECT_TIMEOUT_S):
    """A DB-API connection (psycopg 3 or PyMySQL) whose lock waits and statements are
    bounded; the caller closes it. ConnectError (password-free) when it cannot connect."""
    name = ep.name if database is None else database
    try:
        if ep.engine == "postgres":
            return _connect_postgres(ep, name, autocommit, lock_timeout_s,
                                     statement_timeout_s, connect_timeout_s)
        return _connect_mysql(ep, name, autocommit, lock_timeout_s, statement_timeout_s,
                              connect_timeout_s)
    except Exception as exc:  # noqa: BLE001 - every driver error becomes one redacted type
        # `from None`: the driver's exception (which may quote the connection string)
        # stays out of the traceback; its message is kept, redacted
        raise ConnectError(f"cannot connect to {ep.where()} as {ep.user}: "
                           f"{_describe(exc, ep)}") from None


def _connect_postgres(ep, name, autocommit, lock_timeout_s, statement_timeout_s,
                      connect_timeout_s):
    import psycopg
    # Startup options, not SET statements: no extra statement or transaction per
    # connection, so the statement and transaction counters verification reads
    # (pg_stat_statements, pg_stat_database) see the harness exactly as before.
    return psycopg.connect(host=ep.host, port=ep.port, user=ep.user, password=ep.password,
                           dbname=name, autocommit=autocommit,
                           # libpq's minimum is 2 s; it rounds anything below up to 2
                           connect_timeout=max(2, round(connect_timeout_s)),
                           application_name=HARNESS_APPLICATION,
                           options=f"-c lock_timeout={_ms(lock_timeout_s)} "
                                   f"-c statement_timeout={_ms(statement_timeout_s)}")


def _connect_mysql(ep, name, autocommit, lock_timeout_s, statement_timeout_s,
                   connect_timeout_s):
    import pymysql
    # Both lock waits have a whole-second granularity on MariaDB and MySQL.
    lock_s = max(1, round(lock_timeout_s))
    # One SET statement per connection, as before these bounds (the Com_set_option
    # counter verification reads sees no difference):
    # - lock_wait_timeout: metadata locks (TRUNCATE vs an open transaction that read
    #   the table); innodb_lock_wait_timeout: row locks (INSERT vs FOR UPDATE);
    # - max_statement_time is MariaDB's, inside a /*M! */ comment only MariaDB runs.
    #   MySQL's max_execution_time bounds SELECTs only: there the lock waits and the
    #   client-side read timeout below bound the rest.
    init = (f"SET time_zone = '+00:00', lock_wait_timeout = {lock_s}, "
            f"innodb_lock_wait_timeout = {lock_s} "
            f"/*M!, max_statement_time = {statement_timeout_s:.3f} */")
    return pymysql.connect(
        host=ep.host, port=ep.port, user=ep.user, password=ep.password, database=name,
        autocommit=autocommit, connect_timeout=connect_timeout_s, init_command=init,
        # a server that stops answering mid-statement cannot hold the harness longer
        # than the statement bound plus a margin
        read_timeout=statement_timeout_s + CLIENT_MARGIN_S,
        write_timeout=statement_timeout_s + CLIENT_MARGIN_S)


def accepts_connection(ep: Endpoint, timeout_s: float = 2.0) -> bool:
    """Whether the database accepts a connection within about `timeout_s`."""
    try:
        connect(ep, connect_timeout_s=timeout_s, statement_timeout_s=timeout_s).close()
        return True
    except ConnectError:
        return False


def wait_until_accepting(ep: Endpoint, timeout: float = 30.0, database: str | None = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            connect(ep, database=database).close()
            return
        except ConnectError as exc:   # any failure means "not yet"
            if time.monotonic() > deadline:
                raise TimeoutError(f"{ep.engine} at {ep.host}:{ep.port} did not accept "
                                   f"connections within {timeout:.0f}s: {exc}") from None
            time.sleep(0.1)


def create_schema(ep: Endpoint) -> None:
    """Create `users`, its pristine copy `users_seed` and `fortune`, then restore both."""
    with connect(ep) as conn:
        cur = conn.cursor()
        for stmt in dataset.SCHEMA[ep.engine]:
            cur.execute(stmt)
        if ep.engine == "postgres":
            with cur.copy("COPY users_seed (user_id, username, email, created_at, updated_at,"
                          " is_archived) FROM STDIN") as copy:
                for row in dataset.seed_rows("postgres"):
                    copy.write_row(row)
        else:
            cur.executemany(dataset.INSERT_SEED, dataset.seed_rows("mysql"))
    restore(ep)


# ------------------------------------------------------------------ restore

# Errors that mean "waited for a lock too long" / "ran out of statement time".
_PG_TIMEOUTS = {"55P03": "lock", "57014": "statement"}   # lock_not_available, query_canceled
_MY_LOCK_WAIT_TIMEOUT = 1205
_MY_STATEMENT_TIMEOUTS = (1969, 3024)   # MariaDB max_statement_time, MySQL max_execution_time
_MY_SERVER_LOST = 2013                  # PyMySQL's read_timeout ends a wait with this


@contextmanager
def _answer_deadline(conn, ep: Endpoint, seconds: float):
    """PostgreSQL's driver has no read timeout (PyMySQL's read_timeout does this job):
    past `seconds` the connection's socket is shut down, which ends a wait for a server
    that stopped answering with an error. Yields an Event set when it fired."""
    fired = threading.Event()
    if ep.engine != "postgres":
        yield fired
        return

    def cut():
        fired.set()
        try:
            with socket.socket(fileno=os.dup(conn.fileno())) as sock:
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    timer = threading.Timer(seconds, cut)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


def restore(ep: Endpoint, *, lock_timeout_s: float = LOCK_TIMEOUT_S,
            statement_timeout_s: float = STATEMENT_TIMEOUT_S) -> float:
    """Put `users` back to exactly the contract's 10,000 rows; returns seconds taken.

    RestoreBlocked, naming the session that held the table when the database can say,
    when a lock wait or the whole statement runs out of its bound, or when the server
    stops answering (CLIENT_MARGIN_S past the statement bound)."""
    start = time.perf_counter()
    answer_s = statement_timeout_s + CLIENT_MARGIN_S
    with connect(ep, lock_timeout_s=lock_timeout_s,
                 statement_timeout_s=statement_timeout_s) as conn, \
            _answer_deadline(conn, ep, answer_s) as cut:
        cur = conn.cursor()
        for step in dataset.RESTORE[ep.engine]:
            stmt, params = (step, None) if isinstance(step, str) else step
            try:
                cur.execute(stmt, params)
            except Exception as exc:  # noqa: BLE001 - only the timeouts are translated
                kind = "answer" if cut.is_set() else _timeout_kind(ep, exc)
                if kind is None:
                    raise
                if kind == "answer":
                    raise RestoreBlocked(
                        f"restore of `users` on {ep.where()} gave up: {stmt.split()[0]} got "
                        f"no answer within {answer_s:g} s, not even its own timeouts: the "
                        f"server is frozen or overloaded") from None
                raise RestoreBlocked(_blocked_message(
                    ep, conn, stmt, kind, time.perf_counter() - start,
                    lock_timeout_s if kind == "lock" else statement_timeout_s)) from None
            if cur.description:
                cur.fetchall()
    return time.perf_counter() - start


def _timeout_kind(ep: Endpoint, exc: Exception) -> str | None:
    if ep.engine == "postgres":
        state = getattr(exc, "sqlstate", None)
        return _PG_TIMEOUTS.get(state or "")
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    if code == _MY_SERVER_LOST and "timed out" in str(exc):
        return "answer"
    if code == _MY_LOCK_WAIT_TIMEOUT:
        return "lock"
    if code in _MY_STATEMENT_TIMEOUTS:
        return "statement"
    return None


def _blocked_message(ep: Endpoint, conn, stmt: str, kind: str, waited_s: float,
                     bound_s: float) -> str:
    verb = stmt.split()[0].upper()
    if kind == "lock":
        what = (f"{verb} waited {waited_s:.1f} s for a lock (lock timeout {bound_s:g} s): "
                f"the table was locked by another session")
    else:
        what = (f"{verb} did not finish within its {bound_s:g} s statement timeout "
                f"(the table may be locked by another session)")
    try:
        holders = _lock_holders(ep, conn)
    except Exception as exc:  # noqa: BLE001 - naming the holder is best effort
        holders = f"which one could not be read: {_describe(exc, ep)}"
    return f"restore of `users` on {ep.where()} gave up: {what} ({holders})"


def _lock_holders(ep: Endpoint, conn) -> str:
    """The sessions that hold `users` (or, where the database does not say, the other
    sessions on the database that could), one line each."""
    if ep.engine == "postgres":
        rows = _pg_holders(conn)
    else:
        rows = _mysql_holders(conn, ep)
    if not rows:
        return "no other session visible to the harness's user"
    return "; ".join(rows)


def _pg_holders(conn) -> list[str]:
    # The failed statement left the autocommit connection usable; pg_locks has every
    # granted lock on the table, pg_stat_activity what that session is doing.
    rows = conn.execute(
        "SELECT a.pid, a.usename, a.application_name, a.state, l.mode, "
        "       round(extract(epoch FROM now() - coalesce(a.xact_start, a.backend_start))), "
        "       left(a.query, 120) "
        "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.granted AND l.relation = to_regclass('users') "
        "  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
        "  AND l.pid <> pg_backend_pid() ORDER BY a.pid").fetchall()
    return [f"pid {pid}: user {user}, application {app or '-'!r}, {state or '?'}, "
            f"holds {mode}, transaction open {int(age or 0)} s, last query {query!r}"
            for pid, user, app, state, mode, age, query in rows]


def _mysql_holders(conn, ep: Endpoint) -> list[str]:
    cur = conn.cursor()
    try:   # InnoDB's open transactions (needs the PROCESS privilege to see others')
        cur.execute(
            "SELECT p.ID, p.USER, p.HOST, p.COMMAND, p.TIME, t.trx_started, "
            "       LEFT(COALESCE(t.trx_query, p.INFO, ''), 120) "
            "FROM information_schema.INNODB_TRX t "
            "JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id "
            "WHERE p.ID <> CONNECTION_ID() ORDER BY p.ID")
        trx = cur.fetchall()
    except Exception:  # noqa: BLE001 - fall back to the process list
        trx = []
    if trx:
        return [f"connection {cid}: {user}@{host}, {command} for {secs} s, transaction open "
                f"since {started}, last query {query!r}"
                for cid, user, host, command, secs, started, query in trx]
    # A session idle in a transaction shows as Sleep with no query: every other
    # session on the database is a candidate.
    cur.execute("SELECT ID, USER, HOST, COMMAND, TIME, LEFT(COALESCE(INFO, ''), 120) "
                "FROM information_schema.PROCESSLIST "
                "WHERE ID <> CONNECTION_ID() AND DB = %s ORDER BY ID", (ep.name,))
    return [f"connection {cid} may hold it: {user}@{host}, {command} for {secs} s"
            + (f", query {query!r}" if query else "")
            for cid, user, host, command, secs, query in cur.fetchall()]


# ------------------------------------------------------------------ reading

def fetch_users(ep: Endpoint, where: str = "", params: tuple = ()) -> list[dataset.User]:
    sql = dataset.SELECT_ALL if not where else dataset.SELECT_ALL.replace(
        " ORDER BY", f" WHERE {where} ORDER BY")
    with connect(ep) as conn:
        cur = conn.cursor()
        cur.execute(sql, params)
        return [dataset.normalise_row(r) for r in cur.fetchall()]


def scalar(ep: Endpoint, sql: str, params: tuple = ()):
    with connect(ep) as conn:
        cur = conn.cursor()
        cur.execute(sql, params)
        row = cur.fetchone()
        return None if row is None else row[0]


def server_connections(ep: Endpoint) -> int:
    """Client sessions open on the benchmark database as its user, other than the
    harness's own: what the server under test really holds, counted by the database."""
    if ep.engine == "postgres":
        return int(scalar(ep, "SELECT count(*) FROM pg_stat_activity WHERE datname = %s "
                              "AND usename = %s AND backend_type = 'client backend' "
                              "AND application_name <> %s AND pid <> pg_backend_pid()",
                          (ep.name, ep.user, HARNESS_APPLICATION)))
    # MySQL / MariaDB: only this query's own connection is the harness's at this point
    return int(scalar(ep, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                          "WHERE DB = %s AND USER = %s AND ID <> CONNECTION_ID()",
                      (ep.name, ep.user)))
