"""One raw WebSocket client connection (RFC 6455) for the `websocket` checks.

Written by hand rather than on a WebSocket library (websockets, wsproto) because the checks
must send what a correct library refuses to make (an unmasked client frame, a text frame
that is not UTF-8, a message cut into fragments where the check chooses) and must see the
server's frames exactly as sent, with nothing repaired or answered for it (a library
answers pings itself and hides close codes behind exceptions).
"""
from __future__ import annotations

import base64
import hashlib
import os
import socket
import ssl
import struct
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"      # RFC 6455 §1.3
CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
OPCODE_NAMES = {CONTINUATION: "continuation", TEXT: "text", BINARY: "binary", CLOSE: "close",
                PING: "ping", PONG: "pong"}
MAX_HEAD = 65536


class WsError(Exception):
    """The handshake failed, or no frame came within the timeout (the text says which)."""


@dataclass
class Frame:
    fin: bool
    opcode: int
    payload: bytes
    masked: bool

    @property
    def close_code(self) -> int | None:
        if self.opcode != CLOSE or len(self.payload) < 2:
            return None
        return struct.unpack("!H", self.payload[:2])[0]

    def describe(self) -> str:
        name = OPCODE_NAMES.get(self.opcode, f"opcode {self.opcode:#x}")
        if self.opcode == CLOSE:
            code = self.close_code
            return f"a close frame ({code if code is not None else 'no status'})"
        return f"a {name} frame of {len(self.payload)} bytes"


def accept_for(key: str) -> str:
    """The Sec-WebSocket-Accept a server owes a client that sent `key` (RFC 6455 §4.2.2)."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()


def frame_bytes(opcode: int, payload: bytes, *, fin: bool = True, mask: bool = True) -> bytes:
    """One frame as a client writes it; `mask=False` makes the frame RFC 6455 forbids."""
    head = bytes([(0x80 if fin else 0) | opcode])
    bit = 0x80 if mask else 0
    n = len(payload)
    if n < 126:
        head += bytes([bit | n])
    elif n < 65536:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", n)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload))


@dataclass
class Handshake:
    status: int
    headers: dict[str, str]          # names lower-case
    key: str

    @property
    def accept_ok(self) -> bool:
        return self.headers.get("sec-websocket-accept", "") == accept_for(self.key)


class WsConnection:
    """A TCP (or TLS) connection to `url` (ws:// or wss://) that has sent the handshake."""

    def __init__(self, url: str, token: str | None, timeout: float,
                 ssl_context: ssl.SSLContext | None = None):
        parts = urlsplit(url)
        self.timeout = timeout
        port = parts.port or (443 if parts.scheme == "wss" else 80)
        sock = socket.create_connection((parts.hostname, port), timeout=timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if parts.scheme == "wss":
            context = ssl_context or ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=parts.hostname)
        self.sock = sock
        self.buffer = b""
        self.eof = False
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {parts.path or '/'} HTTP/1.1", f"Host: {parts.netloc}",
                 "Upgrade: websocket", "Connection: Upgrade", f"Sec-WebSocket-Key: {key}",
                 "Sec-WebSocket-Version: 13"] + ([f"token: {token}"] if token else [])
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        self.handshake = self._read_handshake(key)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def _receive(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(65536)
        except (ConnectionResetError, ssl.SSLError):
            data = b""
        if not data:
            self.eof = True
        self.buffer += data

    def _read_handshake(self, key: str) -> Handshake:
        deadline = time.monotonic() + self.timeout
        while b"\r\n\r\n" not in self.buffer:
            if self.eof:
                raise WsError("the server closed the connection before answering the handshake")
            if len(self.buffer) > MAX_HEAD:
                raise WsError("the handshake's answer has no end of its header")
            try:
                self._receive(deadline)
            except socket.timeout:
                raise WsError(f"no answer to the handshake within {self.timeout:g} s") from None
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ")[1])
        except (IndexError, ValueError):
            raise WsError(f"not an HTTP status line: {lines[0]!r}") from None
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return Handshake(status, headers, key)

    def send(self, data: bytes) -> bool:
        """False when the server had already closed the connection."""
        try:
            self.sock.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            return False

    def _take(self, n: int, deadline: float) -> bytes:
        while len(self.buffer) < n:
            if self.eof:
                raise EOFError
            self._receive(deadline)
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def read_frame(self, timeout: float | None = None) -> Frame | None:
        """The next frame, None when the server closed the connection first; WsError when
        nothing complete came within the timeout."""
        wait = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        try:
            b0, b1 = self._take(2, deadline)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._take(2, deadline))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._take(8, deadline))[0]
            key = self._take(4, deadline) if b1 & 0x80 else b""
            payload = self._take(n, deadline)
        except EOFError:
            return None
        except socket.timeout:
            raise WsError(f"no frame within {wait:g} s") from None
        if key:
            payload = bytes(b ^ key[i % 4] for i, b in enumerate(payload))
        return Frame(bool(b0 & 0x80), b0 & 0x0F, payload, bool(key))

    def read_message(self, timeout: float | None = None) -> tuple[int, bytes] | Frame | None:
        """The next data message (opcode, payload), fragments joined; a control frame that
        comes first is returned as the Frame it is (a close, an unasked pong), None at EOF."""
        opcode, parts = None, []
        while True:
            frame = self.read_frame(timeout)
            if frame is None or frame.opcode in (CLOSE, PING, PONG):
                return frame
            if opcode is None:
                opcode = frame.opcode
            parts.append(frame.payload)
            if frame.fin:
                return opcode, b"".join(parts)

    def closed_within(self, seconds: float) -> bool:
        """Whether the server closes the TCP connection within `seconds` (frames it sends
        meanwhile are dropped)."""
        deadline = time.monotonic() + seconds
        while not self.eof:
            try:
                self.buffer = b""
                self._receive(deadline)
            except socket.timeout:
                return False
        return True
