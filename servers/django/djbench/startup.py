"""Open the per-process database pool when a server process starts, and close it when it
exits: gunicorn's post_worker_init / worker_exit (gunicorn.conf.py, the WSGI server) and the
ASGI lifespan (djbench.asgi, the ASGI server)."""
import logging

from django.conf import settings
from django.db import connections

log = logging.getLogger("djbench")


def open_pool() -> None:
    """Open the per-process pool (Django's psycopg pool, or djbench.mysql_pool) with all
    its connections before the process serves. Blocking: under ASGI call it off the event
    loop's thread (Django refuses blocking database calls there)."""
    if settings.BENCH_DB == "none":  # not settings.DATABASES: Django fills in a dummy one
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
    """Close the per-process pool when the process stops."""
    if settings.BENCH_DB == "none":  # not settings.DATABASES: Django fills in a dummy one
        return
    try:
        connections["default"].pool.close()
    except Exception as exc:  # noqa: BLE001 - stopping anyway
        log.warning("could not close the database pool: %s", exc)
