"""ConnectionSpread: where the client's connections are, read half-way through the window
and again until all the client holds are seen (a worker slow to accept on a busy machine
is late, not missing)."""
import threading
from types import SimpleNamespace

from bench.infra.resources import ConnectionSpread


class SlowAcceptHost:
    """Each reading finds one more connection accepted, up to `final` per worker."""

    def __init__(self, final: dict[int, int]):
        self.final, self.readings = final, 0
        self.all_seen = threading.Event()

    def connections_on_port(self, refs, port):
        self.readings += 1
        seen, left = {}, self.readings
        for pid, n in self.final.items():
            seen[pid], left = min(n, left), left - min(n, left)
        if seen == self.final:
            self.all_seen.set()
        return seen


def server():
    return SimpleNamespace(settings=SimpleNamespace(port=8080),
                           spec=SimpleNamespace(worker_check=SimpleNamespace(count="processes")),
                           worker_processes=lambda: [1, 2, 3])


def test_a_reading_short_of_the_clients_connections_is_taken_again_until_all_are_seen():
    host = SlowAcceptHost({1: 3, 2: 2, 3: 0})
    with ConnectionSpread(server(), at_s=0, host=host, expect=5, until_s=60) as spread:
        assert host.all_seen.wait(30)
        spread._thread.join(30)
    assert host.readings == 5
    assert spread.figures() == {"total": 5, "expected": 5, "per_worker": [3, 2, 0], "min": 0, "max": 3}


def test_without_an_expected_count_one_reading_is_the_figure():
    host = SlowAcceptHost({1: 3, 2: 2, 3: 0})
    with ConnectionSpread(server(), at_s=0, host=host) as spread:
        spread._thread.join(30)
    assert host.readings == 1 and spread.figures()["total"] == 1


def test_a_window_that_ends_first_stops_the_reading():
    host = SlowAcceptHost({1: 3})
    with ConnectionSpread(server(), at_s=60, host=host, expect=3, until_s=60) as spread:
        pass
    assert host.readings == 0 and spread.figures() is None


class ReadOutlastsTheWindow:
    """The first reading ends normally; the second is still reading when the window
    ends (the client has gone), and finds nothing."""

    def __init__(self):
        self.readings = 0
        self.second_begun, self.window_over = threading.Event(), threading.Event()

    def connections_on_port(self, refs, port):
        self.readings += 1
        if self.readings == 1:
            return {1: 3, 2: 2}
        self.second_begun.set()
        assert self.window_over.wait(30)
        return {1: 0, 2: 0}


def test_a_reading_that_outlasts_the_window_is_not_the_windows_figure():
    host = ReadOutlastsTheWindow()
    spread = ConnectionSpread(server(), at_s=0, host=host, expect=8, until_s=60)
    with spread:
        assert host.second_begun.wait(30)
        spread._stop.set()           # what leaving the context does: the window is over
        host.window_over.set()
    assert spread.figures() == {"total": 5, "expected": 8, "per_worker": [3, 2], "min": 2, "max": 3}

