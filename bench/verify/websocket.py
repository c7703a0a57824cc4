"""Verification of the `websocket` test (servers/README.md, "WebSocket"), before any load:
the RFC 6455 cases a server must get right, each a check of its own so that a planted
defect (tests/fixtures/ws_defects) fails exactly its own.

Only `websocket handshake` judges Sec-WebSocket-Accept: the other checks go on over a
handshake whose accept value is wrong, so that one defect fails one check.

Run by hand against a server `serve` started:
    .venv/bin/python -m bench.verify.websocket ws://127.0.0.1:PORT/ws/ TOKEN [--ca FILE]
"""
from __future__ import annotations

import argparse
import os
import ssl
import struct
import sys

from bench.verify.checks import Check, make_check
from bench.verify.wsframes import (BINARY, CLOSE, CONTINUATION, PING, PONG, TEXT, Frame,
                                   WsConnection, WsError, accept_for, frame_bytes)

PATH = "/ws/"
SIZES = (32, 4096)                  # the measured messages' sizes (bytes)
LARGEST = 65536                     # the contract's smallest limit a server must accept
CLOSE_WAIT = 2.0                    # seconds a server has to close TCP after a close frame
INVALID_UTF8 = b"webbench \xc3\x28 not utf-8"
PING_PAYLOAD = b"webbench-ping"


def message(size: int, seed: int = 0) -> bytes:
    """A text payload of `size` ASCII bytes that differs between seeds (an echo of another
    message never passes for this one)."""
    alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789"
    return bytes(alphabet[(i * 7 + seed) % len(alphabet)] for i in range(size))


def verify_websocket(url: str, token: str, timeout: float = 5.0,
                     ssl_context: ssl.SSLContext | None = None) -> list[Check]:
    """The `websocket` checks against `url` (ws://host:port/ws/ or wss://...)."""
    def connect(with_token: bool = True) -> WsConnection:
        return WsConnection(url, token if with_token else None, timeout, ssl_context)

    checks = [("websocket handshake", check_handshake), ("websocket without token", check_token),
              ("websocket echo", on_open(check_echo)),
              ("websocket fragmented message", on_open(check_fragments)),
              ("websocket ping", on_open(check_ping)),
              ("websocket invalid utf-8", on_open(check_invalid_utf8)),
              ("websocket unmasked frame", on_open(check_unmasked)),
              ("websocket close", on_open(check_close))]
    out = []
    for name, run in checks:
        try:
            problems = run(connect)
        except (WsError, OSError) as exc:
            problems = [f"{type(exc).__name__ if isinstance(exc, OSError) else ''}"
                        f"{': ' if isinstance(exc, OSError) else ''}{exc}"]
        out.append(make_check(name, problems))
    return out


def opened(conn: WsConnection) -> list[str]:
    """Problems with a handshake other checks go on over: a 101 is all they need."""
    if conn.handshake.status != 101:
        return [f"GET {PATH} with a valid handshake got {conn.handshake.status}, not 101"]
    return []


def on_open(check):
    """A check of what happens on an opened connection: run on a fresh one, unless its
    handshake was not answered 101 (then that is the check's problem)."""
    def run(connect) -> list[str]:
        with connect() as conn:
            return opened(conn) or check(conn)
    return run


def check_handshake(connect) -> list[str]:
    with connect() as conn:
        hs = conn.handshake
        problems = opened(conn)
        if problems:
            return problems
        if hs.headers.get("upgrade", "").lower() != "websocket":
            problems.append(f"101 with Upgrade {hs.headers.get('upgrade')!r}, not websocket")
        if "upgrade" not in hs.headers.get("connection", "").lower():
            problems.append(f"101 with Connection {hs.headers.get('connection')!r}, "
                            "not upgrade")
        if not hs.accept_ok:
            problems.append(f"Sec-WebSocket-Accept {hs.headers.get('sec-websocket-accept')!r}"
                            f", not {accept_for(hs.key)!r} (RFC 6455 §4.2.2)")
        for name in ("sec-websocket-extensions", "sec-websocket-protocol"):
            if name in hs.headers:
                problems.append(f"101 names {name} {hs.headers[name]!r}, which was not offered")
        return problems


def check_token(connect) -> list[str]:
    with connect(with_token=False) as conn:
        if conn.handshake.status != 401:
            return [f"a handshake without the token got {conn.handshake.status}, not 401"]
        return []


def expect_echo(conn: WsConnection, opcode: int, payload: bytes, label: str) -> list[str]:
    got = conn.read_message()
    if got is None:
        return [f"{label}: the server closed the connection instead of echoing"]
    if isinstance(got, Frame):
        return [f"{label}: got {got.describe()} instead of the echo"]
    kind, body = got
    if kind != opcode:
        return [f"{label}: echoed as opcode {kind}, not {opcode}"]
    if body != payload:
        first = next((i for i, (a, b) in enumerate(zip(body, payload)) if a != b),
                     min(len(body), len(payload)))
        return [f"{label}: the echo differs ({len(body)} bytes, first difference at byte "
                f"{first})"]
    return []


def check_echo(conn: WsConnection) -> list[str]:
    """Each measured size, the 64 KiB limit, non-ASCII text and binary, each echoed with
    its own type; then ten messages written back to back, echoed in order."""
    problems: list[str] = []
    cases = [(TEXT, message(n), f"text of {n} B") for n in SIZES + (LARGEST,)]
    cases += [(TEXT, "é😀 webbench ✓".encode(), "non-ASCII text"),
              (BINARY, os.urandom(4096), "binary of 4096 B"),
              (TEXT, b"", "an empty text message")]
    for opcode, payload, label in cases:
        conn.send(frame_bytes(opcode, payload))
        problems += expect_echo(conn, opcode, payload, label)
        if problems:
            return problems
    burst = [message(32, seed) for seed in range(10)]
    conn.send(b"".join(frame_bytes(TEXT, m) for m in burst))
    for i, m in enumerate(burst):
        problems += expect_echo(conn, TEXT, m, f"message {i + 1} of 10 sent back to back")
        if problems:
            break
    return problems


def check_fragments(conn: WsConnection) -> list[str]:
    """A message sent whole, then the same message in 3 fragments: the second echo must be
    one message, the same as the first (what the echo does to a message is the echo
    check's to judge; this one judges the reassembly)."""
    whole = message(3000, seed=5)
    conn.send(frame_bytes(TEXT, whole))
    first = conn.read_message()
    if not isinstance(first, tuple):
        return [f"the message sent whole got {describe(first)}, not its echo"]
    conn.send(frame_bytes(TEXT, whole[:1000], fin=False)
              + frame_bytes(CONTINUATION, whole[1000:2000], fin=False)
              + frame_bytes(CONTINUATION, whole[2000:]))
    second = conn.read_message()
    if not isinstance(second, tuple):
        return [f"a text message in 3 fragments got {describe(second)}, not one echo"]
    if second != first:
        return [f"a text message in 3 fragments was echoed as {len(second[1])} bytes "
                f"unlike the same message sent whole ({len(first[1])} bytes): not "
                f"reassembled"]
    return []


def describe(got) -> str:
    return "the end of the connection" if got is None else got.describe()


def check_ping(conn: WsConnection) -> list[str]:
    conn.send(frame_bytes(PING, PING_PAYLOAD))
    frame = conn.read_frame()
    if frame is None:
        return ["the server closed the connection instead of answering a ping"]
    if frame.opcode != PONG:
        return [f"a ping got {frame.describe()}, not a pong"]
    if frame.payload != PING_PAYLOAD:
        return [f"the pong carries {frame.payload[:40]!r}, not the ping's payload"]
    return []


def expect_close(conn: WsConnection, code: int, what: str) -> list[str]:
    """The server's answer to a frame it must close on: a close frame with `code`, then
    the end of the TCP connection."""
    try:
        frame = conn.read_frame()
    except WsError:
        return [f"{what}: no close frame (the connection stayed open)"]
    if frame is None:
        return [f"{what}: the TCP connection closed without a close frame ({code})"]
    if frame.opcode != CLOSE:
        return [f"{what}: got {frame.describe()}, not a close frame ({code})"]
    if frame.close_code != code:
        return [f"{what}: closed with {frame.close_code}, not {code}"]
    return []


def check_invalid_utf8(conn: WsConnection) -> list[str]:
    conn.send(frame_bytes(TEXT, INVALID_UTF8))
    return expect_close(conn, 1007, "a text message that is not UTF-8")


def check_unmasked(conn: WsConnection) -> list[str]:
    conn.send(frame_bytes(TEXT, b"an unmasked frame", mask=False))
    return expect_close(conn, 1002, "an unmasked client frame")


def check_close(conn: WsConnection) -> list[str]:
    conn.send(frame_bytes(CLOSE, struct.pack("!H", 1000) + b"done"))
    problems = expect_close(conn, 1000, "the client's close (1000)")
    if not problems and not conn.closed_within(CLOSE_WAIT):
        problems.append(f"the TCP connection stayed open {CLOSE_WAIT:g} s after the "
                        "close handshake")
    return problems


def ws_url(base_url: str) -> str:
    """The test's URL at an HTTP base URL: http -> ws, https -> wss."""
    return base_url.rstrip("/").replace("http", "ws", 1) + PATH


def endpoint_check(name: str, base_url: str, token: str, ca=None) -> Check:
    """The websocket checks through an endpoint other than the server's own h1 listener
    (a --behind proxy, TLS): one Check naming those that failed there."""
    context = ssl.create_default_context(cafile=str(ca)) if ca else None
    failed = [c for c in verify_websocket(ws_url(base_url), token, ssl_context=context)
              if not c.passed]
    return make_check(name, [f"{c.name}: {c.detail}" for c in failed],
                      "every websocket check passed there")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.verify.websocket",
                                     description="the websocket checks against one server")
    parser.add_argument("url", help="ws://127.0.0.1:PORT/ws/ or wss://...")
    parser.add_argument("token")
    parser.add_argument("--ca", help="the CA file a wss:// server's certificate chains to")
    args = parser.parse_args(argv)
    context = ssl.create_default_context(cafile=args.ca) if args.ca else None
    checks = verify_websocket(args.url, args.token, ssl_context=context)
    for c in checks:
        print(("ok   " if c.passed else "FAIL ") + c.name + (f": {c.detail}" if c.detail else ""))
    return 0 if all(c.passed for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
