"""The WebSocket echo of servers/django_asgi (servers/README.md, "WebSocket"): a Django
Channels consumer, routed to /ws/ by djbench.asgi. Only the ASGI server imports this module
(channels is in django_asgi's requirements, not django's)."""
import json

from channels.generic.websocket import AsyncWebsocketConsumer

from djbench import common

TOKEN = common.TOKEN.encode("latin-1")
DENIED = json.dumps({"error": "bad or missing token"}).encode()   # common.unauthorized()'s body


class EchoConsumer(AsyncWebsocketConsumer):
    """One consumer instance per connection, run as that connection's task on the worker's
    event loop; no channel layer (CHANNEL_LAYERS unset: no groups, nothing leaves the
    process). Every text message goes back as text, every binary one as binary. Fragments,
    ping/pong, UTF-8 (1007), masking (1002) and the close handshake are the server's
    protocol's (uvicorn's, on websockets' sans-I/O ServerProtocol)."""

    async def connect(self):
        # The token before the handshake: Channels' own refusal (DenyConnection / close()
        # before accept()) makes the server answer 403 with no body, so a refused
        # handshake is answered with the ASGI WebSocket Denial Response extension instead
        # (uvicorn offers it): 401 with the contract's JSON error, as every other route.
        if dict(self.scope["headers"]).get(b"token") != TOKEN:
            await self.base_send({"type": "websocket.http.response.start", "status": 401,
                                  "headers": [(b"content-type", b"application/json")]})
            await self.base_send({"type": "websocket.http.response.body", "body": DENIED})
            return
        await self.accept()

    async def receive(self, text_data=None, bytes_data=None):
        if text_data is not None:
            await self.send(text_data=text_data)
        else:
            await self.send(bytes_data=bytes_data)
