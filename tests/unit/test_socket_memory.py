"""The socket buffers of a role (bench.infra.agent.sockets): `ss -tme`'s output read into
bytes per socket, and the sampler's figures from a fake host's connections."""
from __future__ import annotations

import time

from bench.infra.agent import sockets
from bench.infra.fake import SOCKET_BYTES, FakeHost
from bench.infra.resources import ResourceSampler

# iproute2 6.1 to a pipe: the skmem of each socket on an indented line of its own
SS_OUTPUT = """\
LISTEN 0      1024         0.0.0.0:28080      0.0.0.0:*    ino:5001 sk:1 cgroup:/ <->
\t skmem:(r0,rb131072,t0,tb16384,f0,w0,o0,bl0,d0)
ESTAB  0      0          127.0.0.1:28080  127.0.0.1:41060 ino:5002 sk:2 cgroup:/ <->
\t skmem:(r2304,rb131072,t0,tb2626560,f1792,w4096,o0,bl0,d3)
ESTAB  0      0          127.0.0.1:41060  127.0.0.1:28080 ino:0 sk:3 cgroup:/ <->
\t skmem:(r0,rb131072,t0,tb2626560,f4096,w0,o0,bl0,d0)
"""


def test_each_sockets_charged_memory_is_its_queues_and_what_was_reserved_ahead():
    charged = sockets.parse(SS_OUTPUT)
    # r + w + f: t (what the device still holds) is part of w; buffer sizes are limits
    assert charged == {"5001": 0, "5002": 2304 + 4096 + 1792}      # inode 0: no owner


def test_skmem_on_the_sockets_own_line_is_read_too():
    one_line = "ESTAB 0 0 127.0.0.1:1 127.0.0.1:2 ino:77 sk:9 skmem:(r10,rb5,t3,tb5,f20,w30,o1,bl0,d0)"
    assert sockets.parse(one_line) == {"77": 60}
    assert sockets.parse("") == {}


def test_the_sampler_keeps_each_groups_socket_memory_and_most_sockets():
    host = FakeHost("fake")
    server = host.spawn(["server"])
    host.connections[server.pid] = 16
    with ResourceSampler({"server": lambda: [server.pid], "idle": lambda: []},
                         host=host, interval=0.01) as sampler:
        while sampler.readings < 8:           # memory (and sockets) every 4th reading
            time.sleep(0.01)
    figures = sampler.figures()
    assert figures["server"]["socket_memory_mb"] == {
        "mean": round(16 * SOCKET_BYTES / 2**20, 2), "peak": round(16 * SOCKET_BYTES / 2**20, 2),
        "sockets": 16}
    assert figures["idle"]["socket_memory_mb"] is None       # no process: no reading
