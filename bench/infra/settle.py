"""Let the database finish the previous sample's background work before the next one.

An `update user` sample leaves dirty pages for PostgreSQL's next checkpoint and old row
versions for InnoDB's purge; the restore that follows every sample adds more. Left alone,
that work lands in whichever sample runs next, as a latency spike in someone else's
figures. So after each restore the database is made to do it now, and the harness waits
until the database's processes are idle:

- PostgreSQL: CHECKPOINT (writes every dirty buffer now; the next timed checkpoint then
  has nearly nothing to do). Needs superuser or pg_checkpoint, which the local and Docker
  databases give the harness; elsewhere it is skipped and said so.
- MariaDB: SET GLOBAL innodb_max_purge_lag_wait = 0 (10.5.7+) waits until purge has
  caught up. Needs SUPER-like rights; skipped and said so otherwise. MySQL has no
  equivalent, so there only the CPU wait below applies.
- Both, where the database's processes are known (local mode): wait until they use less
  than QUIET_CORES of CPU over two consecutive windows, or give up after TIMEOUT_S.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from bench.infra import db
from bench.infra.host import LOCAL, Host

QUIET_CORES = 0.05       # 5 % of one core: an idle server's housekeeping stays below this
WINDOW_S = 0.25
TIMEOUT_S = 30.0


@dataclass
class Settled:
    seconds: float = 0.0
    quiet: bool = True                 # False: still busy when TIMEOUT_S ran out
    steps: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"seconds": round(self.seconds, 3), "quiet": self.quiet, "steps": self.steps}


def _flush(ep: db.Endpoint) -> str:
    """Make the database do its deferred work now; says what it did or why not."""
    if ep.engine == "postgres":
        sql, what = "CHECKPOINT", "checkpoint"
    else:
        sql, what = "SET GLOBAL innodb_max_purge_lag_wait = 0", "InnoDB purge"
    try:
        with db.connect(ep) as conn:
            conn.cursor().execute(sql)
        return what
    except Exception as exc:  # noqa: BLE001 - no rights / not MariaDB: the CPU wait remains
        first = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        return f"{what} skipped ({first})"


def _cpu_seconds(host: Host, pids: list[int]) -> float:
    """CPU seconds used so far by these processes (each already one of the database's)."""
    total = 0.0
    for pid in pids:
        for proc in host.tree(pid)[:1]:
            figures = host.read(proc, memory=False)
            total += figures.cpu_s if figures else 0.0
    return total


def _wait_idle(host: Host, pids: Callable[[], list[int]], deadline: float) -> bool:
    quiet_windows = 0
    before = _cpu_seconds(host, pids())
    while time.monotonic() < deadline:
        time.sleep(WINDOW_S)
        now = _cpu_seconds(host, pids())
        quiet_windows = quiet_windows + 1 if now - before < QUIET_CORES * WINDOW_S else 0
        if quiet_windows >= 2:
            return True
        before = now
    return False


def settle(ep: db.Endpoint, pids: Callable[[], list[int]] | None = None, *,
           host: Host = LOCAL, timeout: float = TIMEOUT_S) -> Settled:
    start = time.monotonic()
    result = Settled(steps=[_flush(ep)])
    if pids is not None and pids():
        result.quiet = _wait_idle(host, pids, start + timeout)
        result.steps.append("CPU idle" if result.quiet else f"still busy after {timeout:.0f} s")
    else:
        result.steps.append("database processes not visible: no CPU wait")
    result.seconds = time.monotonic() - start
    return result
