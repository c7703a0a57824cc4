"""How the harness's own process reacts to signals."""
from __future__ import annotations

import signal
import sys
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


@contextmanager
def shielded(what: str = "stopping servers and databases"):
    """Cleanup that a second Ctrl-C or SIGTERM must not cut short: a server or database
    left running, or a data folder deleted under a live server, costs more than the few
    seconds the cleanup takes (every step of it is bounded). The signals are noted, and
    once the cleanup is done a KeyboardInterrupt is raised for them (unless an exception
    is already on its way, which then goes on instead)."""
    caught: list[int] = []

    def note(signum, frame):
        if not caught:
            print(f"\nstill {what}; the cleanup is bounded and finishes shortly",
                  file=sys.stderr, flush=True)
        caught.append(signum)
    previous = {s: signal.signal(s, note) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if caught:                         # only reached when the body raised nothing
        raise KeyboardInterrupt(f"signal {caught[0]} during cleanup")
