"""--server-memory on this machine's real memory cgroups (bench.infra.memory_cap and its
host-side steps): a program born in a cap that it outgrows is killed and the kill is
counted; one within it is accounted; nothing stays behind. Skipped, with the kernel's
reason, only where this machine cannot cap memory at all (no memory cgroup, not root),
where the harness's preflight refuses --server-memory in the same words."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.infra.agent import cgroup, memcap, procfs
from bench.infra.host import LOCAL
from bench.infra.memory_cap import MemoryCap, remove_leftovers, why_not

WHY_NOT = why_not(LOCAL, 64)
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=f"no memory cap here: {WHY_NOT}")
# allocates and touches N MiB, says so, then waits for its stdin to close
HOLDER = ("import sys\nheld = b'\\x01' * (int(sys.argv[1]) << 20)\nprint('held', flush=True)\n"
          "sys.stdin.read()\n")


def _born_in(cap: MemoryCap, mib: int) -> subprocess.Popen:
    return subprocess.Popen(cap.argv([sys.executable, "-c", HOLDER, str(mib)]),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_a_program_that_outgrows_its_cap_is_killed_and_the_kill_is_counted():
    cap = MemoryCap.open(LOCAL, "test", 48)
    try:
        proc = _born_in(cap, 96)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == -9 and "held" not in out
        figures = cap.read()
        assert figures["oom_kills"] >= 1 and figures["peak_mb"] <= 48 + 1
        assert "the memory cap of 48 MiB" in cap.oom_reason()
    finally:
        cap.close()
    assert not os.path.exists(cap.path)


def test_a_program_within_its_cap_is_accounted_as_its_own_anonymous_memory():
    cap = MemoryCap.open(LOCAL, "test", 128)
    proc = _born_in(cap, 32)
    try:
        assert proc.stdout.readline().strip() == "held"
        figures = cap.read()
        assert figures["oom_kills"] == 0 and cap.oom_reason(figures) is None
        # 32 MiB held, plus the interpreter (a few MiB), all of it charged to the cap
        assert 32 <= figures["anon_mb"] <= 64 and figures["peak_mb"] >= figures["anon_mb"]
        assert figures["kind"] in (memcap.V1, memcap.V2) and figures["limit_mb"] == 128
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
        cap.close()
    assert not os.path.exists(cap.path)


def test_a_killed_harnesss_capped_cgroups_are_removed_by_the_next_one():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    cap = MemoryCap.open(LOCAL, "test", 64)
    cap.close()
    if cap.kind == memcap.V2:
        pytest.skip("v2's capped cgroups share the CPU cgroups' owner folders: "
                    "tests/integration/test_cgroups.py removes those")
    # the same layout as a live cap's, under an owner that no longer runs
    base = os.path.dirname(os.path.dirname(cap.path))        # <own>/webbench
    left = os.path.join(base, f"{dead.pid}-1", "cap9-server")
    os.makedirs(left)
    assert os.path.join(base, f"{dead.pid}-1") in remove_leftovers(LOCAL)
    assert not os.path.exists(os.path.dirname(left))
    assert os.path.basename(base) == cgroup.BASE and procfs.started(dead.pid) is None


def test_a_proxy_born_in_a_cap_it_outgrows_fails_its_start_with_the_oom_kill(tmp_path):
    """--proxy-memory: the proxy is born in its cap as a server is. This one (a stand-in
    for a proxy: it fills 96 MiB at start) outgrows 48 MiB before it is ready, and the
    failure says why."""
    from bench.core.manifest import discover
    from bench.core.plan import Variant
    from bench.core.proxyspec import load_proxy
    from bench.core.settings import Settings
    from bench.infra.lifecycle import running_server
    from bench.infra.proxy import ProxyError, running_proxy
    from tests.conftest import TEST_SERVER_PORT
    greedy = tmp_path / "greedy"
    greedy.mkdir()
    (greedy / "proxy.toml").write_text(
        'name = "greedy"\nready_timeout = 30\nstart = ["{python}", "-c", '
        '"import time; held = bytes(range(256)) * (96 << 12); time.sleep(60)"]\n')
    upstream = Variant(discover()["nginx"], "none", False)
    # the proxy's port and its upstream's, as tests/integration/test_proxy.py has them
    settings = Settings(workers=1, db_connections=4, port=TEST_SERVER_PORT + 1)
    with running_server(upstream, settings, None, tmp_path / "nginx.log") as running:
        port = int(running.server.base_url.rsplit(":", 1)[1])
        with pytest.raises(ProxyError, match=r"exited with code -9 before it was ready: killed "
                                             r"by the kernel's OOM killer: the memory cap of "
                                             r"48 MiB"):
            with running_proxy(load_proxy(greedy), listen_host="127.0.0.1",
                               listen_port=TEST_SERVER_PORT, upstream_host="127.0.0.1",
                               upstream_port=port, workers=1, log_path=tmp_path / "proxy.log",
                               memory_mb=48):
                pass
