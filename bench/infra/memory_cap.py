"""A memory cap on a server (--server-memory): each start of the server gets a capped
memory cgroup of its own on the host that runs it, is born inside it (seam.born_in), and
the cgroup is read and removed once the server stopped. The host-side steps are
bench/infra/agent/memcap.py, reached through the Host seam (so a remote server host is
capped by its agent).

What a cap adds to a sample: the cgroup's own account of the server's memory (peak, and
the split into the program's anonymous memory, page cache, socket buffers and other
kernel memory), and, when the kernel killed a process of the server for the cap, the
reason its sample failed.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from bench.infra.seam import Host, born_in

V2 = "cgroup2 memory.max"
_starts = itertools.count(1)


class CapUnavailable(Exception):
    """The host cannot cap a process's memory (why, in the message)."""


@dataclass
class MemoryCap:
    host: Host
    path: str
    procs: str
    kind: str                  # "cgroup2 memory.max" or "cgroup v1 memory.limit_in_bytes"
    limit_mb: float
    closed: bool = False

    @classmethod
    def open(cls, host: Host, role: str, limit_mb: float) -> "MemoryCap":
        answer = host.call("memcap_open", name=f"cap{next(_starts)}-{role}", limit_mb=limit_mb)
        if "unavailable" in answer:
            raise CapUnavailable(answer["unavailable"])
        return cls(host, answer["path"], answer["procs"], answer["kind"], limit_mb)

    @property
    def is_v2(self) -> bool:
        """A v2 cap's cgroup is also where the role's CPU is counted (a process is in one
        cgroup v2 only: moving it to a CPU cgroup would take it out of its cap)."""
        return self.kind == V2

    def argv(self, argv: list[str]) -> list[str]:
        return born_in(argv, self.procs)

    def describe(self) -> str:
        return f"{self.limit_mb:g} MiB ({self.kind})"

    def read(self) -> dict | None:
        """The cgroup's figures now (bench.infra.agent.memcap.memcap_read), with the cap
        and its kind; None once the cgroup is gone or cannot be read."""
        if self.closed:
            return None
        try:
            figures = self.host.call("memcap_read", path=self.path, kind=self.kind)
        except Exception:  # noqa: BLE001 - a host that cannot answer gives no figures
            return None
        return {"limit_mb": self.limit_mb, "kind": self.kind, **figures}

    def oom_reason(self, figures: dict | None = None) -> str | None:
        """Why the server died, when the kernel's OOM killer killed a process of it for
        the cap; None otherwise."""
        figures = figures or self.read() or {}
        kills = figures.get("oom_kills") or 0
        if not kills:
            return None
        return (f"killed by the kernel's OOM killer: the memory cap of {self.describe()} "
                f"was reached ({kills} OOM kill{'s' if kills > 1 else ''} in its cgroup)")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            try:
                self.host.call("memcap_close", path=self.path)
            except Exception:  # noqa: BLE001 - left for the next invocation's leftovers pass
                pass


def why_not(host: Host, limit_mb: float) -> str | None:
    """Why `host` cannot cap a server's memory at `limit_mb` MiB (None: it can): a cap
    made and removed at once, the preflight's question."""
    try:
        cap = MemoryCap.open(host, "probe", limit_mb)
    except CapUnavailable as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001 - a host that cannot run the step cannot cap
        return f"the host cannot make cgroups ({type(exc).__name__}: {exc})"
    cap.close()
    return None


def remove_leftovers(host: Host) -> list[str]:
    """The v1 capped cgroups a killed harness left on `host`."""
    try:
        return host.call("memcap_remove_leftovers")
    except Exception:  # noqa: BLE001
        return []
