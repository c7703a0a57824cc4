"""The kernel's memory for a process's TCP sockets, read for real (`ss` and /proc): data
a process never reads stays in the kernel's socket buffers, where PSS does not see it."""
from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from bench.infra.host import LOCAL

pytestmark = pytest.mark.integration

# accepts one connection and never reads from it
NEVER_READS = """
import socket, sys
listener = socket.create_server(("127.0.0.1", 0))
print(listener.getsockname()[1], flush=True)
connection, _ = listener.accept()
print("accepted", flush=True)
sys.stdin.read()
"""


def test_bytes_nobody_read_are_in_the_socket_memory_of_the_two_ends():
    child = subprocess.Popen([sys.executable, "-c", NEVER_READS], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        port = int(child.stdout.readline())
        sender = socket.create_connection(("127.0.0.1", port))
        # until then the connection waits in the listener's queue, an fd of no process
        assert child.stdout.readline().strip() == "accepted"
        sender.setblocking(False)
        sent = 0
        try:
            while True:                  # until the kernel holds no more of it
                sent += sender.send(b"x" * 65536)
        except BlockingIOError:
            pass
        found = LOCAL.socket_memory({"reader": [LOCAL.process(child.pid)],
                                     "sender": [LOCAL.process(os.getpid())]})
        (held_there, sockets_there), (held_here, sockets_here) = found["reader"], found["sender"]
        # every byte sent sits in the reader's receive queue or this end's write queue,
        # each in buffers at least as large as what they hold
        assert held_there + held_here >= sent > 0, (found, sent)
        assert held_there > 0 and sockets_there == 2        # its listener and the connection
        assert sockets_here >= 1
        sender.close()
    finally:
        child.kill()
        child.wait(timeout=10)
