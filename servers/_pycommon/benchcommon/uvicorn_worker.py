"""The gunicorn worker class of the uvicorn servers (fastapi, django_asgi).

gunicorn runs W uvicorn workers (uvicorn-worker's UvicornWorker, the Gunicorn worker class
that uvicorn's maintainers publish for production) so that `--reuse-port` gives every worker
its own SO_REUSEPORT listening socket: the kernel then spreads client connections over the
workers by hash. uvicorn's own `--workers` supervisor shares one listening socket, and each
worker's event loop accepts every pending connection at once when it wakes, so one worker
could hold half of the clients (measured with 64 wrk connections over 8 workers: 22 to 43 on
the busiest).

The only difference from UvicornWorker: the event loop and HTTP parser are named instead of
"auto", so a missing uvloop or httptools is a start-up error rather than a silent fallback
to asyncio / h11; and the ASGI lifespan is required (the apps open their pools in it).
"""
from uvicorn_worker import UvicornWorker


class UvloopHttptoolsWorker(UvicornWorker):
    CONFIG_KWARGS = {"loop": "uvloop", "http": "httptools", "lifespan": "on"}
