import asyncio
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "djbench.settings")

django_application = get_asgi_application()   # first: it sets Django up for the imports below

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from djbench.consumers import EchoConsumer  # noqa: E402
from djbench.startup import close_pool, open_pool  # noqa: E402 - needs the settings above

# Django Channels' routing, as its docs set it up: HTTP to Django's own ASGI handler,
# WebSocket to the consumers by URL (/ws/: the echo). No AllowedHostsOriginValidator or
# AuthMiddlewareStack: no sessions or users here, the token header is the check.
router = ProtocolTypeRouter({
    "http": django_application,
    "websocket": URLRouter([path("ws/", EchoConsumer.as_asgi())]),
})


async def application(scope, receive, send):
    """Channels' ProtocolTypeRouter, plus the ASGI lifespan protocol that Django 5.2 does
    not speak: uvicorn opens each worker's DB pool before it accepts connections and closes
    it when the worker stops (a worker's atexit hooks never run: uvicorn ends it by
    re-raising SIGTERM)."""
    if scope["type"] != "lifespan":
        return await router(scope, receive, send)
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await asyncio.to_thread(open_pool)
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await asyncio.to_thread(close_pool)
            await send({"type": "lifespan.shutdown.complete"})
            return
