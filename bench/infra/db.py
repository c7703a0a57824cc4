"""Talking to a provisioned database: connect, create the contract's table, restore it.

Where the databases come from (local throwaway servers, Docker, existing ones) is
`bench.provision`'s job; this module only needs an endpoint.
"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from urllib.parse import unquote, urlsplit

from bench.core import dataset


@dataclass(frozen=True)
class Endpoint:
    engine: str            # "postgres" | "mysql"
    host: str
    port: int
    user: str
    password: str
    name: str = dataset.DATABASE_NAME

    def public(self) -> dict:
        """What goes into results.json: everything but the password."""
        d = asdict(self)
        d.pop("password")
        return d

    def server_env(self) -> dict[str, str]:
        return {
            "BENCH_DB_HOST": self.host,
            "BENCH_DB_PORT": str(self.port),
            "BENCH_DB_NAME": self.name,
            "BENCH_DB_USER": self.user,
            "BENCH_DB_PASSWORD": self.password,
        }


def endpoint_from_dsn(engine: str, dsn: str) -> Endpoint:
    """`postgresql://user:pw@host:port/db` or `mysql://user:pw@host:port/db`."""
    parts = urlsplit(dsn)
    if not parts.hostname:
        raise ValueError(f"{engine} DSN {dsn!r} has no host (expected scheme://user:pw@host:port/db)")
    default_port = 5432 if engine == "postgres" else 3306
    return Endpoint(
        engine=engine,
        host=parts.hostname,
        port=parts.port or default_port,
        user=unquote(parts.username or "bench"),
        password=unquote(parts.password or ""),
        name=parts.path.lstrip("/") or dataset.DATABASE_NAME,
    )


# PostgreSQL sessions the harness opens carry this name, so that counting a server's
# connections (`server_connections`) leaves the harness's own out.
HARNESS_APPLICATION = "webbench-harness"


def connect(ep: Endpoint, *, database: str | None = None, autocommit: bool = True):
    """A DB-API connection (psycopg 3 or PyMySQL); the caller closes it."""
    name = ep.name if database is None else database
    if ep.engine == "postgres":
        import psycopg
        return psycopg.connect(host=ep.host, port=ep.port, user=ep.user, password=ep.password,
                               dbname=name, autocommit=autocommit, connect_timeout=5,
                               application_name=HARNESS_APPLICATION)
    import pymysql
    conn = pymysql.connect(host=ep.host, port=ep.port, user=ep.user, password=ep.password,
                           database=name, autocommit=autocommit, connect_timeout=5,
                           init_command="SET time_zone = '+00:00'")
    return conn


def wait_until_accepting(ep: Endpoint, timeout: float = 30.0, database: str | None = None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            connect(ep, database=database).close()
            return
        except Exception as exc:  # noqa: BLE001 - any failure means "not yet"
            if time.monotonic() > deadline:
                raise TimeoutError(f"{ep.engine} at {ep.host}:{ep.port} did not accept "
                                   f"connections within {timeout:.0f}s: {exc}") from exc
            time.sleep(0.1)


def create_schema(ep: Endpoint) -> None:
    """Create `users` and its pristine copy `users_seed`, then restore `users` from it."""
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


def restore(ep: Endpoint) -> float:
    """Put `users` back to exactly the contract's 10,000 rows; returns seconds taken."""
    start = time.perf_counter()
    with connect(ep) as conn:
        cur = conn.cursor()
        for stmt in dataset.RESTORE[ep.engine]:
            cur.execute(stmt)
            if cur.description:
                cur.fetchall()
    return time.perf_counter() - start


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
