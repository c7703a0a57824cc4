"""Seeing pipelining between a server and its database, on the wire (CONTRACT.md 6):
a statement sent on a connection before the previous answer came back, which fails
verification unless the manifest declares `pipelining`. Statement counters cannot see
it, so `Relay` sits between server and database, copies every byte unchanged and reads
just enough framing to know how many commands are outstanding on each connection.

- PostgreSQL (v3): a command is a `Query`, `Execute` or `FunctionCall`, outstanding
  until its CommandComplete / EmptyQueryResponse / PortalSuspended / ErrorResponse
  (all of a request's until its ReadyForQuery). Pipelined: sent while another command
  is outstanding; per Execute, not per Sync, as psycopg's pipeline mode and both
  drivers' `executemany` send many Executes and one Sync. A multi-statement `Query` is
  one command. A command sent after the previous one's CommandComplete but before its
  ReadyForQuery is not pipelined: its answer came back, and tokio-postgres' row stream
  ends at CommandComplete, so diesel-async sends its next statement there whenever a
  read splits the two messages (1 in 5,978 commands once, CI, 2026-11-26). Nor is a
  statement sent behind a command-less request (tokio-postgres' Close + Sync of a
  dropped statement is not awaited): the contract is about statements.
- MySQL / MariaDB: a command is a client packet with sequence id 0 after the
  handshake (bar COM_QUIT / STMT_CLOSE / STMT_SEND_LONG_DATA: no answer), outstanding
  until the *first* packet of its answer is complete (a result set's end would need a
  full parser): never flags a client that waits, misses one that sends while the
  previous answer is streaming in (as may an answer of 256+ packets: seq ids wrap).

Each chunk is parsed before it is forwarded, so a waiting client is never flagged.
Connections it cannot read (TLS, MySQL compression, a malformed length) are still
relayed, and counted as `opaque`.
"""
from __future__ import annotations

import asyncio
import struct
import threading
from dataclasses import dataclass, replace

from bench.infra.db import Endpoint


class Unreadable(Exception):
    """A connection's framing cannot be followed (encrypted, compressed, garbage)."""


@dataclass
class PipeliningReport:
    engine: str
    connections: int = 0       # client connections open at some time in the window
    requests: int = 0          # commands seen (see the module docstring)
    pipelined: int = 0         # commands sent while another was outstanding
    max_outstanding: int = 0   # most commands outstanding at once on one connection
    opaque: int = 0            # connections the relay could not read (not counted above)

    def describe(self) -> str:
        return (f"{self.pipelined} of {self.requests} {self.engine} commands sent while "
                f"another was outstanding, on {self.connections} connection(s), at most "
                f"{self.max_outstanding} outstanding" + (f"; {self.opaque} connection(s) "
                f"unreadable (TLS or compression)" if self.opaque else ""))


class _Frames:
    """Cuts a byte stream into messages (`body_length(header)`: a body's size), keeping
    each one's header and first `peek` body bytes only: a large result is never buffered."""

    def __init__(self, header: int, body_length, peek: int = 0):
        # both may change between two messages (PostgreSQL: startup packet, then typed)
        self.header, self.body_length = header, body_length
        self.peek, self.head = peek, bytearray()
        self.left: int | None = None      # body bytes still to come; None: in a header

    def feed(self, data: bytes):
        """Yields every message `data` completes, as its header + first body bytes."""
        i, n = 0, len(data)
        while i < n:
            if self.left is None:
                take = min(self.header - len(self.head), n - i)
                self.head += data[i:i + take]
                i += take
                if len(self.head) < self.header:
                    return
                self.left = self.body_length(self.head)
                if self.left < 0:
                    raise Unreadable(f"a message announces {self.left} body bytes")
            take = min(self.left, n - i)
            room = max(self.header + self.peek - len(self.head), 0)
            self.head += data[i:i + min(take, room)]
            self.left -= take
            i += take
            if self.left == 0:
                head, self.head, self.left = bytes(self.head), bytearray(), None
                yield head


def _pg_length(head) -> int:
    """Body length: a header's last 4 bytes count themselves (the 1-byte SSL answer has none)."""
    return struct.unpack_from("!i", head, len(head) - 4)[0] - 4 if len(head) >= 4 else 0


SSL_REQUEST, GSSENC_REQUEST, CANCEL_REQUEST = 80877103, 80877104, 80877102


class PostgresConversation:
    """One connection's state, fed each chunk before it is forwarded. `client` returns,
    per command the chunk sends, how many are outstanding with it (2 or more: pipelined)."""

    def __init__(self):
        self.up = _Frames(4, _pg_length, peek=4)   # startup packets first, their code peeked
        self.down = _Frames(5, _pg_length)
        self.ready = False         # the first ReadyForQuery ended the startup
        self.syncs = self.commands = 0   # awaiting ReadyForQuery / awaiting completion

    def client(self, data: bytes) -> list[int]:
        depths = []
        for head in self.up.feed(data):
            if self.up.header == 4:                      # untyped: startup phase
                code = struct.unpack_from("!i", head, 4)[0] if len(head) >= 8 else 0
                if code in (SSL_REQUEST, GSSENC_REQUEST):
                    self.down.header = 1                 # answered by one byte: S/G or N
                elif code != CANCEL_REQUEST:
                    self.up.header = 5                   # typed messages from here
                continue
            # before the first ReadyForQuery: authentication ('p'). A Sync ends a
            # request of Parse/Bind/Describe/Execute/Close; Query and FunctionCall are
            # requests of their own; each is answered by one ReadyForQuery
            kind = chr(head[0]) if self.ready else "p"
            if kind in "QEF":
                self.commands += 1
                depths.append(self.commands)
            if kind in "QFS":
                self.syncs += 1
        return depths

    def server(self, data: bytes) -> None:
        for head in self.down.feed(data):
            if self.down.header == 1:                    # the answer to an SSL/GSS request
                if head != b"N":
                    raise Unreadable("the connection is encrypted")
                self.down.header = 5
                continue
            kind = chr(head[0])
            if kind == "Z":
                if self.ready:
                    self.syncs = max(self.syncs - 1, 0)
                    if not self.syncs:                   # every request answered
                        self.commands = 0
                self.ready = True
            elif kind in "CIsE" and self.ready:          # a command completed (or failed)
                self.commands = max(self.commands - 1, 0)


def _mysql_length(head) -> int:
    return int.from_bytes(head[:3], "little")


CLIENT_COMPRESS, CLIENT_SSL = 0x20, 0x800
NO_ANSWER = {0x01, 0x18, 0x19}     # COM_QUIT, COM_STMT_SEND_LONG_DATA, COM_STMT_CLOSE


class MySqlConversation:
    """One MySQL / MariaDB connection's state; same interface as PostgresConversation."""

    def __init__(self):
        self.up = _Frames(4, _mysql_length, peek=4)     # capability flags peeked
        self.down = _Frames(4, _mysql_length, peek=1)
        self.authenticated = self.compressed = False
        self.waiting = 0           # commands whose answer has not begun

    def client(self, data: bytes) -> list[int]:
        depths = []
        for head in self.up.feed(data):
            seq, payload = head[3], head[4:]
            if not self.authenticated:
                if seq == 1 and len(payload) >= 4:       # HandshakeResponse41 / SSLRequest
                    caps = int.from_bytes(payload[:4], "little")
                    if caps & CLIENT_SSL:
                        raise Unreadable("the connection is encrypted")
                    self.compressed = bool(caps & CLIENT_COMPRESS)
            elif seq == 0 and payload and payload[0] not in NO_ANSWER:
                self.waiting += 1
                depths.append(self.waiting)
        return depths

    def server(self, data: bytes) -> None:
        for head in self.down.feed(data):
            seq, first = head[3], head[4:5]
            if not self.authenticated:
                # OK / ERR answering the client's (last) authentication packet; the
                # greeting is packet 0, auth-switch and more-data packets start 0xFE/0x01
                if seq >= 2 and first in (b"\x00", b"\xff"):
                    self.authenticated = True
                    if self.compressed:                  # compressed framing from here
                        raise Unreadable("the connection is compressed")
            elif seq == 1:
                self.waiting = max(self.waiting - 1, 0)


CONVERSATIONS = {"postgres": PostgresConversation, "mysql": MySqlConversation}


class Relay:
    """A TCP relay on `host` (an ephemeral port unless `port` is given) in front of one
    database `endpoint`; a server given `relay.endpoint` reaches the database through it.
    An asyncio loop in a daemon thread, not a thread per connection: one thread serves a
    whole pool, and as the counters are touched on the loop only (report and reset run
    there too), no lock is needed and a chunk is always parsed before it is forwarded."""

    def __init__(self, endpoint: Endpoint, port: int = 0, host: str = "127.0.0.1"):
        if endpoint.engine not in CONVERSATIONS:
            raise ValueError(f"no relay for engine {endpoint.engine!r} (known: postgres, mysql)")
        self.upstream = endpoint
        self._stats = PipeliningReport(endpoint.engine)
        self._connected = 0                      # client connections open now
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name=f"pipelining-relay-{endpoint.engine}")
        self._thread.start()
        self._server = None
        try:
            self._server = self._on_loop(asyncio.start_server(self._serve, host, port))
        except BaseException:            # e.g. the port is taken: no thread left behind
            self.close()
            raise
        bound = self._server.sockets[0].getsockname()[1]
        self.endpoint = replace(endpoint, host=host, port=bound)

    def _on_loop(self, coroutine, timeout: float = 10.0):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout)

    def report(self) -> PipeliningReport:
        async def copy():
            return replace(self._stats)
        return self._on_loop(copy())

    def reset(self) -> None:
        """Start a new window: counters to zero, the open connections counted in it.
        Each connection's protocol state (what is outstanding) is kept."""
        async def restart():
            self._stats = PipeliningReport(self.upstream.engine, connections=self._connected)
        self._on_loop(restart())

    async def _serve(self, client_reader, client_writer) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(
                self.upstream.host, self.upstream.port)
        except OSError:
            client_writer.close()      # the client sees the refusal as a dropped connection
            return
        conversation = CONVERSATIONS[self.upstream.engine]()
        self._connected += 1
        self._stats.connections += 1
        readable = [True]
        try:
            await asyncio.gather(
                self._pump(client_reader, server_writer, conversation.client, readable),
                self._pump(server_reader, client_writer, conversation.server, readable))
        except asyncio.CancelledError:
            # the relay closes while a connection is still open (a server slow to stop):
            # ending here, not as a cancelled task, keeps asyncio from logging a traceback
            # for each connection
            pass
        finally:
            self._connected -= 1

    async def _pump(self, reader, writer, parse, readable: list) -> None:
        """Copy one direction; when it ends, close the other side (whose pump ends too)."""
        try:
            while data := await reader.read(1 << 16):
                try:
                    for depth in (parse(data) or ()) if readable[0] else ():
                        self._stats.requests += 1
                        self._stats.pipelined += depth > 1
                        self._stats.max_outstanding = max(self._stats.max_outstanding, depth)
                except (Unreadable, struct.error):
                    readable[0] = False
                    self._stats.opaque += 1
                writer.write(data)
                await writer.drain()
        except OSError:
            pass                       # a reset connection: the other side is closed below
        finally:
            writer.close()

    def close(self) -> None:
        if not self._thread.is_alive():
            return

        async def shutdown():      # a cancelled pump closes its writer on the way out
            if self._server:
                self._server.close()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)
        try:
            self._on_loop(shutdown())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()

    def __enter__(self) -> "Relay":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
