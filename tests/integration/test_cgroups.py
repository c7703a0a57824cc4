"""Exact CPU per role through cgroup v2 (bench.infra.cgroups, bench.infra.agent.cgroup),
on this machine's real cgroup2 hierarchy: skipped where the harness cannot make cgroups
(not root, no cgroup2 mount), as the harness then falls back to /proc itself."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.infra.agent import cgroup, procfs
from bench.infra.cgroups import CGROUP2, RoleCgroups
from bench.infra.host import LOCAL
from bench.infra.resources import ResourceSampler

BURN_S = 0.3
# burns BURN_S of its own CPU (not wall time: the machine is shared), once told to
BURNER = ("import sys, time\nsys.stdin.readline()\nt = time.process_time()\n"
          "while time.process_time() - t < %s: pass\n" % BURN_S)
# forks a child that burns the CPU and exits, then waits for its stdin to close
FORKER = ("import os, sys, time\nsys.stdin.readline()\npid = os.fork()\nif pid == 0:\n"
          "    t = time.process_time()\n    while time.process_time() - t < %s: pass\n"
          "    os._exit(0)\nos.waitpid(pid, 0)\nprint('done', flush=True)\nsys.stdin.read()\n"
          % BURN_S)


def _usable() -> bool:
    probe = RoleCgroups({"probe": LOCAL}).open()
    probe.close()
    return "probe" in probe.paths


pytestmark = pytest.mark.skipif(not _usable(), reason="no writable cgroup2 hierarchy here")


def _python(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def test_a_busy_process_reads_its_own_cpu_and_leaves_no_cgroup_behind():
    proc = _python(BURNER)
    sampler = ResourceSampler({"server": lambda: [proc.pid]})
    with sampler:
        placed_in = procfs.cgroup_of(proc.pid)
        proc.stdin.write("go\n")
        proc.stdin.flush()
        _, status, rusage = os.wait4(proc.pid, 0)
    server = sampler.figures()["server"]
    own = rusage.ru_utime + rusage.ru_stime
    assert server["accounting"] == CGROUP2 and server["accounting_note"] is None
    # the cgroup counts from the move on: the whole burn (told to start after it), not
    # the interpreter's start-up before it, which rusage also has (the start-up's share
    # grows on a busy machine); 0.001: cpu_s is rounded to ms, 0.03: the two clocks
    assert own >= BURN_S and BURN_S - 0.001 <= server["cpu_s"] <= own + 0.03, (server, own)
    assert "/webbench/" in placed_in
    assert not os.path.exists(os.path.join(procfs.cgroup2_mount(), placed_in.lstrip("/")))


def test_a_process_that_exits_mid_window_still_counts():
    parent = _python(FORKER)
    try:
        sampler = ResourceSampler({"server": lambda: [parent.pid]})
        with sampler:
            parent.stdin.write("go\n")
            parent.stdin.flush()
            assert parent.stdout.readline().strip() == "done"     # the child is gone
        server = sampler.figures()["server"]
        assert server["accounting"] == CGROUP2 and server["cpu_s"] >= BURN_S
        # moved back out where it came from, alive
        assert "/webbench/" not in procfs.cgroup_of(parent.pid)
    finally:
        parent.stdin.close()
        parent.wait()


def test_a_killed_owners_cgroups_are_removed_and_their_processes_moved_out():
    sleeper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    folder = os.path.join(procfs.cgroup2_mount(), cgroup.BASE, f"{dead.pid}-1")
    try:
        os.makedirs(os.path.join(folder, "w1-server"))
        assert cgroup.cgroup_place(os.path.join(folder, "w1-server"), [sleeper.pid])["moved"]
        assert folder in cgroup.cgroup_remove_leftovers()
        assert not os.path.exists(folder) and procfs.cgroup_of(sleeper.pid) == "/"
        assert sleeper.poll() is None
    finally:
        sleeper.stdin.close()
        sleeper.wait()


def test_a_process_in_another_managers_cgroup_is_not_moved_and_its_role_falls_back():
    other = os.path.join(procfs.cgroup2_mount(), "webbench-test-other")
    sleeper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)
    os.makedirs(other, exist_ok=True)
    try:
        with open(os.path.join(other, "cgroup.procs"), "w") as f:
            f.write(str(sleeper.pid))
        sampler = ResourceSampler({"database": lambda: [sleeper.pid]})
        with sampler:
            pass
        database = sampler.figures()["database"]
        assert database["accounting"] == "procfs"
        assert "/webbench-test-other" in database["accounting_note"]
        assert procfs.cgroup_of(sleeper.pid) == "/webbench-test-other"
    finally:
        sleeper.stdin.close()
        sleeper.wait()
        os.rmdir(other)
