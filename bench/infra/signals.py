"""How the harness's own process reacts to signals."""
from __future__ import annotations

import signal
from contextlib import contextmanager


@contextmanager
def sigterm_as_interrupt():
    """A CI job's SIGTERM stops a run the way Ctrl-C does: cleanly, results kept."""
    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
