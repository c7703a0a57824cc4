"""What many connections need of this machine (`--connections 10000` and more): open
files for the server and for the load generator, local ports for the client, and the
kernel settings a run relies on, recorded with its results.

The harness raises its own open-file limit to the hard limit (to fs.nr_open as root) as
it starts: every server and generator it starts inherits it, as a production service
gets its LimitNOFILE. What it cannot raise, and a connection count that one client
address cannot open to one port, are refused before anything starts, saying which
setting to change.
"""
from __future__ import annotations

import resource
from pathlib import Path

# the kernel settings a run with many connections relies on, as /proc/sys names them
SYSCTLS = ("net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog",
           "net.ipv4.ip_local_port_range", "fs.nr_open", "fs.file-max")
# files each process needs besides its connections (logs, libraries, pipes, epoll, a
# server's database pool and listeners)
SPARE_FILES = 1024


def sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text().split("\n")[0].replace("\t", " ")
    except OSError:
        return None


def kernel_settings() -> dict[str, str]:
    """The settings SYSCTLS names, as this machine has them (those it has)."""
    return {name: value for name in SYSCTLS if (value := sysctl(name)) is not None}


def raise_open_files() -> tuple[int, int]:
    """This process's open-file limit raised as far as it may go: the soft limit to the
    hard one, and the hard one to fs.nr_open where the process may (root). The limits
    that hold afterwards (soft, hard)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    ceiling = int(sysctl("fs.nr_open") or hard)
    for wanted in ((ceiling, ceiling), (hard, hard)):
        if wanted[0] <= soft and wanted[1] <= hard:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, wanted)
            break
        except (ValueError, OSError):
            continue
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def problems(connections: int) -> list[str]:
    """Why this machine cannot hold `connections` client connections to one server port
    from one address (empty: it can): the open-file limit of the server's and the
    generator's processes, and the client's local ports."""
    out = []
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if connections + SPARE_FILES > soft:
        out.append(f"--connections {connections} needs {connections + SPARE_FILES:,} open files "
                   f"in the server and in the load generator; this process may open "
                   f"{soft:,} (its hard limit, `ulimit -Hn`; root may raise it up to "
                   f"fs.nr_open): raise it (limits.conf's nofile, systemd's LimitNOFILE)")
    ports = sysctl("net.ipv4.ip_local_port_range")
    if ports:
        low, high = (int(p) for p in ports.split())
        if connections > high - low + 1:
            out.append(f"--connections {connections} from one address to one port needs as "
                       f"many local ports; net.ipv4.ip_local_port_range ({low}-{high}) gives "
                       f"{high - low + 1:,}: widen it, or measure from several client hosts")
    return out
