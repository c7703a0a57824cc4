"""One raw TCP connection for the HTTP conformance checks: requests go out as the exact
bytes a check wrote (odd ones included), and responses are read with h11, a strict
RFC 9112 parser, so a badly framed answer shows as such instead of being repaired."""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass

import h11

READ_SIZE = 65536


class Unanswered(Exception):
    """No complete response within the timeout (the detail says how long)."""


class ClosedUnanswered(Exception):
    """The server closed the connection (or reset it) before any response began."""


class Garbled(Exception):
    """What came back is not a valid HTTP/1.1 response (h11's reason)."""


@dataclass
class Answer:
    status: int
    http_version: str
    headers: list[tuple[str, str]]     # names lower-case, in the order received
    body: bytes
    received_at: float                 # this machine's clock (time.time()) when complete

    def header(self, name: str) -> str | None:
        """The field's value (several lines joined with ", "), None when absent."""
        values = [v for k, v in self.headers if k == name]
        return ", ".join(values) if values else None

    def has_token(self, name: str, token: str) -> bool:
        """Whether a list-valued field (Connection, Transfer-Encoding) holds `token`."""
        value = self.header(name) or ""
        return token in (t.strip().lower() for t in value.split(","))


def request_bytes(target: str, host: str, token: str, *, version: str = "HTTP/1.1",
                  extra: tuple[str, ...] = (), eol: str = "\r\n", body: str = "") -> bytes:
    lines = [f"GET {target} {version}", f"Host: {host}", f"token: {token}", *extra]
    return (eol.join(lines) + eol + eol + body).encode("latin-1")


class Connection:
    """A client connection; `timeout` bounds every wait for the server."""

    def __init__(self, host: str, port: int, timeout: float):
        self.timeout = timeout
        self.sock = socket.create_connection((host, port), timeout=timeout)
        # each write its own segment: the split-writes check depends on it
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending = b""        # bytes received past the last response read
        self.eof = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self.sock.close()

    def send(self, data: bytes) -> bool:
        """False when the server had already closed (a reset or broken pipe): what it
        answered before closing can still be read."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def send_in_pieces(self, data: bytes, sizes: tuple[int, ...], pause_s: float) -> None:
        """`data` in writes of the given sizes in turn, with a pause after each so that
        each reaches the server as a read of its own."""
        i, turn = 0, 0
        while i < len(data):
            size = sizes[turn % len(sizes)]
            self.sock.sendall(data[i:i + size])
            i, turn = i + size, turn + 1
            time.sleep(pause_s)

    def _receive(self, deadline: float) -> bytes:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(READ_SIZE)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
        return data

    def read_response(self, timeout: float | None = None) -> Answer:
        """The next response to a GET (1xx skipped). Unanswered, ClosedUnanswered or
        Garbled otherwise. Each response gets an h11 parser of its own, so that whether
        the connection persists is judged by the checks, not by h11's own rules."""
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        parser = h11.Connection(h11.CLIENT)
        parser.send(h11.Request(method="GET", target="/", headers=[("Host", "probe")]))
        parser.send(h11.EndOfMessage())
        received = self.pending        # b"" to h11 means the end of the stream
        if received:
            parser.receive_data(received)
        if self.eof:
            parser.receive_data(b"")
        status, body = None, b""
        try:
            while True:
                event = parser.next_event()
                if event is h11.NEED_DATA:
                    try:
                        data = self._receive(deadline)
                        received += data
                        parser.receive_data(data)
                    except socket.timeout:
                        got = "a partial response" if status is not None else "no answer"
                        raise Unanswered(f"{got} within {wait:g} s") from None
                elif isinstance(event, h11.Response):
                    status = event
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    break
                elif isinstance(event, h11.ConnectionClosed):
                    raise ClosedUnanswered("closed the connection without answering")
        except h11.RemoteProtocolError as exc:
            if not received and self.eof:
                raise ClosedUnanswered("closed the connection without answering") from None
            raise Garbled(f"unreadable response ({exc})") from None
        self.pending = parser.trailing_data[0]
        return Answer(status.status_code, "HTTP/" + status.http_version.decode(),
                      [(k.decode("latin-1").lower(), v.decode("latin-1"))
                       for k, v in status.headers], body, time.time())

    def closed_within(self, seconds: float) -> bool:
        """Whether the server closes the connection within `seconds` (bytes it sends
        meanwhile are kept for read_response)."""
        deadline = time.monotonic() + seconds
        while not self.eof:
            try:
                self.pending += self._receive(deadline)
            except socket.timeout:
                return False
        return True
