"""LOCAL.run stops the whole process group of a command it gives up on: a child the
command started (initdb's bootstrap postgres, a build script's own commands) never
outlives it, whether the command timed out or the harness was interrupted meanwhile."""
from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from bench.infra import state
from bench.infra.host import LOCAL


def started_child(pidfile: Path, within_s: float = 30.0) -> int:
    """The pid the command wrote once its child was running (waits for that event)."""
    deadline = time.monotonic() + within_s
    while not (pidfile.is_file() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline, "the command never started its child"
        time.sleep(0.01)
    return int(pidfile.read_text())


def gone(pid: int, within_s: float = 10.0) -> bool:
    """Whether the process ends (or is a zombie) once the SIGKILL sent to its group is
    delivered: waits for that, at most `within_s` (a child left running never ends)."""
    try:
        psutil.Process(pid).wait(within_s)
    except psutil.TimeoutExpired:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        pass
    return True


def command(pidfile: Path) -> list[str]:
    # the shell waits for its child: stopping the shell alone would orphan the sleep
    return ["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"]


def test_a_command_that_times_out_takes_its_children_with_it(tmp_path):
    pidfile = tmp_path / "child.pid"
    seen = []
    done = LOCAL.run(command(pidfile), timeout=1.0,
                     on_start=lambda pid: seen.append(started_child(pidfile)))
    assert done.timed_out
    assert gone(seen[0])


def test_an_interrupted_command_takes_its_children_with_it(tmp_path):
    pidfile = tmp_path / "child.pid"
    seen = []

    def interrupt(pid):
        seen.append(started_child(pidfile))
        raise KeyboardInterrupt          # what Ctrl-C raises in the harness meanwhile
    with pytest.raises(KeyboardInterrupt):
        LOCAL.run(command(pidfile), timeout=60, on_start=interrupt)
    assert gone(seen[0])


def test_a_command_interrupted_while_it_is_recorded_does_not_outlive_the_harness(
        tmp_path, monkeypatch):
    """The signal can land between the start and the first wait: while the state file
    records the group (seen in CI: a build's `sleep 60` outlived a SIGTERMed harness)."""
    pidfile = tmp_path / "child.pid"
    seen = []

    def interrupted(pid, argv):
        seen.append(started_child(pidfile))
        raise KeyboardInterrupt("signal 15")
    monkeypatch.setattr(state, "group_started", interrupted)
    with pytest.raises(KeyboardInterrupt):
        LOCAL.run(command(pidfile), timeout=60)
    assert gone(seen[0])
