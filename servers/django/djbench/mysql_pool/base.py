"""Django's MySQL backend plus a fixed per-process connection pool (both Django servers).

Why it exists: Django 5.2 ships a connection pool for PostgreSQL only (OPTIONS["pool"],
psycopg_pool), and both Django servers need one. Under ASGI, Django runs each request's ORM
calls on a new per-request thread with a new per-request DatabaseWrapper, so CONN_MAX_AGE
cannot keep a connection between requests (it leaks one per request instead; Django ticket
#33497, and Django's docs say to disable persistent connections under ASGI and use the
database backend's pool). Under WSGI (gunicorn gthread), CONN_MAX_AGE would keep one
connection per request thread, tying the thread count to the connection budget. This module
gives MySQL the same behaviour as Django's PostgreSQL pool, so that both engines follow the
harness's rule of one fixed pool per process:

  - OPTIONS["pool_size"] connections per process, opened at start-up (open_pool());
  - a request checks one out when it makes its first query and gives it back when Django
    closes the request's connection at request_finished (CONN_MAX_AGE must be 0);
  - Django's per-connection session set-up (SQL_AUTO_IS_NULL, isolation level) runs once
    per pooled connection, not once per request;
  - a connection that saw an error Django could not clear, or that is left outside
    autocommit or inside an atomic block, is closed instead of returned.
Everything else (SQL, conversions, mysqlclient) is Django's own MySQL backend.
"""
import queue
import threading

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.mysql import base
from django.db.utils import OperationalError

CHECKOUT_TIMEOUT = 30.0  # seconds, like psycopg_pool's default


class ConnectionPool:
    def __init__(self, size: int, connect):
        self.size = size
        self._connect = connect          # () -> new MySQLdb connection
        self._idle = queue.LifoQueue()   # most recently used first: warm connections
        self._lock = threading.Lock()
        self._opened = 0

    def _reserve(self) -> bool:
        with self._lock:
            if self._opened >= self.size:
                return False
            self._opened += 1
            return True

    def _release(self):
        with self._lock:
            self._opened -= 1

    def _new(self):
        try:
            return self._connect()
        except BaseException:
            self._release()
            raise

    def open(self):
        """Open every connection now rather than on first use."""
        while self._reserve():
            self._idle.put(self._new())

    def get(self):
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        if self._reserve():
            return self._new()
        try:
            return self._idle.get(timeout=CHECKOUT_TIMEOUT)
        except queue.Empty:
            raise OperationalError(
                f"no pooled connection free within {CHECKOUT_TIMEOUT:.0f}s") from None

    def put(self, conn):
        self._idle.put(conn)

    def close(self):
        """Close the idle connections (process exit); checked-out ones are closed on return."""
        self.size = 0
        while True:
            try:
                self.discard(self._idle.get_nowait())
            except queue.Empty:
                return

    def discard(self, conn):
        self._release()
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - it is being thrown away anyway
            pass


class DatabaseWrapper(base.DatabaseWrapper):
    _pools: dict[str, ConnectionPool] = {}
    _pools_lock = threading.Lock()

    def get_connection_params(self):
        params = super().get_connection_params()
        params.pop("pool_size", None)
        return params

    @property
    def pool(self) -> ConnectionPool:
        pool = self._pools.get(self.alias)
        if pool is None:
            if self.settings_dict["CONN_MAX_AGE"] != 0:
                raise ImproperlyConfigured("djbench.mysql_pool needs CONN_MAX_AGE = 0")
            size = int(self.settings_dict["OPTIONS"].get("pool_size", 1))
            params = self.get_connection_params()
            parent = super()

            def connect():
                return parent.get_new_connection(params)

            with self._pools_lock:
                pool = self._pools.setdefault(self.alias, ConnectionPool(size, connect))
        return pool

    def get_new_connection(self, conn_params):
        return self.pool.get()

    def init_connection_state(self):
        if getattr(self.connection, "djbench_initialised", False):
            return
        super().init_connection_state()
        self.connection.djbench_initialised = True

    def _close(self):
        conn = self.connection
        if conn is None:
            return
        self.connection = None
        pool = self.pool
        if (self.errors_occurred or self.in_atomic_block or not conn.get_autocommit()
                or pool.size == 0):
            pool.discard(conn)
        else:
            pool.put(conn)


def open_pool(alias: str = "default"):
    """Open the pool of `alias` now (start-up). Under ASGI call it outside the event loop's
    thread."""
    from django.db import connections
    connections[alias].pool.open()
