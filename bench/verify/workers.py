"""Does the started server really run W workers? Counted from its process tree.

Every server is given the same W (`--workers`); one that starts fewer (a worker that
crashed at start-up, a setting it ignores) would be compared unfairly and nobody would
know. The manifest's [workers] table says what a worker looks like from outside
(`bench.core.manifest.WorkerCheck`): a descendant process, or a named thread. The count
itself is the server's census (`ServerProcess.worker_census`), which readiness
(`ServerProcess.wait_ready`) has already waited on: by the time this runs, a server that
shows fewer or more than W is not still starting them.
"""
from __future__ import annotations

import time

from bench.verify.contract import Check


def check_workers(server, settle_s: float = 0.0) -> Check:
    """Passes when exactly W workers are seen; `settle_s` keeps counting that much longer
    for a census that is not W yet (e.g. after a load, for a replaced worker)."""
    want = server.workers
    deadline = time.monotonic() + settle_s
    while True:
        seen, what = server.worker_census()
        if seen is None:
            return Check("workers", False, f"not counted: {what}", severity="warning")
        if seen == want or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    if seen == want:
        return Check("workers", True, f"{seen} {what}")
    asked = server.settings.workers
    why = f"--workers {asked}" if want == asked else \
        f"--workers {asked}, --runtime-threads {server.settings.runtime_threads}"
    return Check("workers", False, f"expected {want} workers ({why}), found {seen} {what}")
