"""The gunicorn worker class of the uvicorn servers (fastapi, django_asgi).

gunicorn runs W uvicorn workers (uvicorn-worker's UvicornWorker, the Gunicorn worker class
that uvicorn's maintainers publish for production) so that `--reuse-port` gives every worker
its own SO_REUSEPORT listening socket: the kernel then spreads client connections over the
workers by hash. uvicorn's own `--workers` supervisor shares one listening socket, and each
worker's event loop accepts every pending connection at once when it wakes, so one worker
could hold half of the clients (measured with 64 wrk connections over 8 workers: 22 to 43 on
the busiest).

The only difference from UvicornWorker: the event loop, HTTP parser and WebSocket protocol
are named instead of "auto", so a missing uvloop, httptools or websockets is a start-up error
rather than a silent fallback to asyncio / h11 / wsproto (or to no WebSocket at all); the ASGI lifespan is required (the apps
open their pools in it); and uvicorn's WebSocket keepalive ping is off (the servers' WebSocket
contract has no server heartbeat, and its 20 s pong timeout would close a connection whose
client is slow to answer).
"""
from uvicorn_worker import UvicornWorker


class UvloopHttptoolsWorker(UvicornWorker):
    # ws: uvicorn's implementation on websockets' sans-I/O protocol, what "auto" picks in
    # uvicorn 0.54 when websockets is installed ("websockets" names the legacy one, deprecated)
    CONFIG_KWARGS = {"loop": "uvloop", "http": "httptools", "lifespan": "on",
                     "ws": "websockets-sansio", "ws_ping_interval": None}
