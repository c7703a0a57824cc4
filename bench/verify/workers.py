"""Does the started server really run W workers? Counted from its process tree.

Every server is given the same W (`--workers`); one that starts fewer (a worker that
crashed at start-up, a setting it ignores) would be compared unfairly and nobody would
know. The manifest's [workers] table says what a worker looks like from outside
(`bench.core.manifest.WorkerCheck`): a descendant process, or a named thread.
"""
from __future__ import annotations

import time

from bench.verify.contract import Check

# Workers of a multi-process server start in parallel after the first one answers
# /ping/; a few seconds covers every server here (they take well under one).
SETTLE_S = 5.0


def count(server) -> tuple[int | None, str]:
    """(workers seen now, what was counted); None when the manifest says it cannot be."""
    check = server.spec.worker_check
    if check.count == "processes":
        workers = server.worker_processes()
        return len(workers), f"worker processes (pids {', '.join(str(p.pid) for p in workers)})"
    if check.count == "threads":
        return len(server.worker_threads()), f"worker threads named /{check.match}/"
    return None, check.reason


def check_workers(server, settle_s: float = SETTLE_S) -> Check:
    """Passes when exactly W workers are seen within `settle_s` of readiness."""
    want = server.settings.workers
    deadline = time.monotonic() + settle_s
    while True:
        seen, what = count(server)
        if seen is None:
            return Check("workers", False, f"not counted: {what}", severity="warning")
        if seen == want or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if seen == want:
        return Check("workers", True, f"{seen} {what}")
    return Check("workers", False, f"expected {want} workers (--workers {want}), found {seen} "
                                   f"{what}")
