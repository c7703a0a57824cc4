"""The kernel's memory for the TCP sockets a set of processes holds: the socket buffers
that a process's PSS does not show, read without a memory cgroup (a capped server's
cgroup has its own figure, memcap.py).

Each socket's memory is what the kernel charges to the socket's memory account, as
sock_diag's meminfo gives it (`ss -tme` prints it as skmem): `r` the receive queue, `w`
the write queue and `f` what was reserved ahead for either (the kernel's
sk_forward_alloc), each in bytes of the buffers holding the data (an skb's truesize, not
its payload). `t` (what the network device still holds of the write queue) is part of
`w`, so it is not added.

`ss` (iproute2) reads the sockets of its network namespace through netlink in one dump;
the processes' fds say which of them are theirs. Sockets in TIME_WAIT belong to no
process and are not asked for: a Connection: close run leaves thousands of them.
"""
from __future__ import annotations

import re
import subprocess

from .procfs import socket_inodes, started

SS = ["ss", "-tanmeH", "exclude", "time-wait"]
SS_TIMEOUT_S = 10
_INODE = re.compile(r"\bino:(\d+)")
_SKMEM = re.compile(r"\bskmem:\(([^)]*)\)")
CHARGED = ("r", "w", "f")        # receive queue, write queue, reserved ahead


def socket_memory(groups: dict) -> dict | None:
    """Per group name: [bytes, sockets] over the TCP sockets its [pid, start] processes
    hold in this network namespace (one `ss` for every group); None when `ss` cannot be
    run or fails (no figure, never an error)."""
    inodes = {name: set() for name in groups}
    for name, refs in groups.items():
        for pid, start in refs:
            if started(pid) == start:
                inodes[name] |= {link[8:-1] for link in socket_inodes(pid)}
    charged = {}
    if any(inodes.values()):
        try:
            done = subprocess.run(SS, capture_output=True, text=True, timeout=SS_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode != 0:
            return None
        charged = parse(done.stdout)
    out = {}
    for name, held in inodes.items():
        mine = [charged[i] for i in held if i in charged]
        out[name] = [sum(mine), len(mine)]
    return out


def parse(output: str) -> dict[str, int]:
    """inode -> bytes charged, from `ss -tme`'s output: a socket's line names its inode,
    its skmem comes on the same line or on the indented one after it."""
    charged, inode = {}, None
    for line in output.splitlines():
        if line[:1] not in (" ", "\t"):
            found = _INODE.search(line)
            inode = found.group(1) if found else None
        memory = _SKMEM.search(line)
        if memory and inode is not None and inode != "0":
            fields = dict(_field(part) for part in memory.group(1).split(",") if part)
            charged[inode] = sum(fields.get(name, 0) for name in CHARGED)
    return charged


def _field(part: str) -> tuple[str, int]:
    """'rb131072' -> ('rb', 131072)."""
    letters = len(part) - len(part.lstrip("abcdefghijklmnopqrstuvwxyz"))
    return part[:letters], int(part[letters:] or 0)

