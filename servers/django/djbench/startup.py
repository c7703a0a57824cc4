"""Open the database connections when a server process starts, and close them when it exits."""
import logging
import threading

from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created

log = logging.getLogger("djbench")

# WSGI: the raw connection of each request thread, so that worker_exit can close them (a
# thread's Django connection cannot be closed from another thread through Django).
_thread_connections: dict[int, object] = {}


def _remember(sender, connection, **kwargs):
    _thread_connections[threading.get_ident()] = connection.connection


def open_thread_connections(executor, threads: int) -> None:
    """WSGI (gunicorn gthread): open the persistent connection of each of the `threads`
    threads of `executor`, the pool that will run the requests. Every task waits at a
    barrier until all are running, so each lands on its own thread."""
    if not settings.DATABASES:
        return
    connection_created.connect(_remember)
    barrier = threading.Barrier(threads, timeout=30)

    def open_one():
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            pass  # still connect this thread; the others connect on first use
        connections["default"].ensure_connection()

    for future in [executor.submit(open_one) for _ in range(threads)]:
        try:
            future.result()
        except Exception as exc:  # noqa: BLE001 - the first request retries anyway
            log.warning("could not open a database connection at start-up: %s", exc)


def close_thread_connections() -> None:
    """WSGI: close the request threads' connections (gunicorn worker_exit)."""
    while _thread_connections:
        _, conn = _thread_connections.popitem()
        try:
            conn.close()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


def open_pool() -> None:
    """ASGI: open the per-process pool (Django's psycopg pool, or djbench.mysql_pool).
    Blocking: call it off the event loop's thread (Django refuses blocking database calls
    there)."""
    if not settings.DATABASES:
        return
    try:
        pool = connections["default"].pool
        if settings.BENCH_DB == "postgres":
            pool.open(wait=True, timeout=30)
        else:
            pool.open()
    except Exception as exc:  # noqa: BLE001 - connections then open on first use
        log.warning("could not open the database pool at start-up: %s", exc)


def close_pool() -> None:
    """ASGI: close the per-process pool when the worker stops."""
    if not settings.DATABASES:
        return
    try:
        connections["default"].pool.close()
    except Exception as exc:  # noqa: BLE001 - stopping anyway
        log.warning("could not close the database pool: %s", exc)
