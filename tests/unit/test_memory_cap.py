"""--server-memory on numbers and on a made-up cgroup tree: the size's parsing, the wrapper
that starts a program inside a cgroup, the host-side steps for cgroup v2 and v1 (their
files written and read), the harness's side (OOM reason, preflight, CPU counted in a v2
cap) and the header sentence. On the real hierarchy: tests/integration/test_memory_cap.py."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.core.placement import parse_memory_mb
from bench.core.settings import SelectionError, Settings
from bench.infra.agent import cgroup, memcap, procfs
from bench.infra.cgroups import RoleCgroups
from bench.infra.fake import FakeHost
from bench.infra.memory_cap import MemoryCap, why_not
from bench.infra.seam import born_in
from bench.report.tables import memory_cap_sentence
from bench.session import FOR_RUN, Session, preflight
from tests.unit.test_session import RecordingHost, all_on, cases_of, spec

MIB = 2**20


@pytest.mark.parametrize("text, mb", [("512M", 512), ("512MiB", 512), ("1.5G", 1536),
                                      ("300", 300), ("2g", 2048), ("65536k", 64)])
def test_a_size_is_read_in_binary_units(text, mb):
    assert parse_memory_mb(text) == mb


@pytest.mark.parametrize("text, says", [("lots", "not a memory size"), ("-5M", "not a memory"),
                                        ("512Q", "not a memory"), ("1K", "at least 8 MiB")])
def test_a_size_that_cannot_be_a_cap_is_refused_by_the_flags_name(text, says):
    with pytest.raises(SelectionError, match=f"--server-memory.*{says}"):
        parse_memory_mb(text)


def test_a_malformed_proxy_cap_is_refused_by_its_own_flags_name():
    from bench.core.placement import validate_placement
    from bench.core.settings import Settings
    with pytest.raises(SelectionError, match="--proxy-memory 'lots' is not a memory size"):
        validate_placement(Settings(proxy_memory="lots"))


def test_the_settings_give_the_cap_in_mib_and_none_without_it():
    assert Settings(server_memory="1G").server_memory_mb == 1024
    assert Settings().server_memory_mb is None


def test_a_program_born_in_a_cgroup_wrote_its_own_pid_there_and_kept_it(tmp_path):
    procs = tmp_path / "cgroup.procs"
    argv = born_in([sys.executable, "-c", "import os; print(os.getpid())"], str(procs))
    proc = subprocess.run(argv, capture_output=True, text=True, check=True)
    # the shell wrote $$ and exec'd the program: one pid, the one in the file
    assert procs.read_text().strip() == proc.stdout.strip()


def _v2_tree(tmp_path, monkeypatch, controllers="cpu memory"):
    mount = tmp_path / "v2"
    owner = mount / cgroup.BASE / cgroup._owner()
    owner.mkdir(parents=True)
    (mount / "cgroup.controllers").write_text(controllers + "\n")
    for folder in (mount, mount / cgroup.BASE, owner):
        (folder / "cgroup.subtree_control").write_text("")
    monkeypatch.setattr(procfs, "cgroup2_mount", lambda: str(mount))
    return mount, owner


def test_a_v2_cap_turns_the_memory_controller_on_and_writes_its_limit(tmp_path, monkeypatch):
    mount, owner = _v2_tree(tmp_path, monkeypatch)
    answer = memcap.memcap_open("cap1-server", 128)
    assert answer == {"path": str(owner / "cap1-server"),
                      "procs": str(owner / "cap1-server" / "cgroup.procs"),
                      "kind": memcap.V2, "limit_mb": 128}
    assert (owner / "cap1-server" / "memory.max").read_text() == str(128 * MIB)
    for folder in (mount, mount / cgroup.BASE, owner):
        assert (folder / "cgroup.subtree_control").read_text() == "+memory"


def test_v2_figures_are_read_from_the_cgroups_own_files(tmp_path):
    (tmp_path / "memory.stat").write_text(f"anon {30 * MIB}\nfile {2 * MIB}\nsock {MIB // 2}\n"
                                          f"kernel {MIB}\nshmem 0\n")
    (tmp_path / "memory.events").write_text("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n")
    (tmp_path / "memory.current").write_text(f"{34 * MIB}\n")
    (tmp_path / "memory.peak").write_text(f"{40 * MIB}\n")
    assert memcap.memcap_read(str(tmp_path), memcap.V2) == {
        "oom_kills": 1, "usage_mb": 34.0, "peak_mb": 40.0, "anon_mb": 30.0, "file_mb": 2.0,
        "sock_mb": 0.5, "kernel_mb": 1.0}


def test_without_v2s_memory_controller_the_cap_nests_below_the_own_v1_cgroup(tmp_path,
                                                                           monkeypatch):
    _v2_tree(tmp_path, monkeypatch, controllers="cpu io")
    v1 = tmp_path / "v1"
    monkeypatch.setattr(procfs, "cgroup1_mount", lambda c: str(v1) if c == "memory" else None)
    monkeypatch.setattr(procfs, "cgroup1_of", lambda pid, c: "/sandbox/job7")
    answer = memcap.memcap_open("cap2-server", 64)
    path = v1 / "sandbox" / "job7" / cgroup.BASE / cgroup._owner() / "cap2-server"
    assert answer["kind"] == memcap.V1 and answer["path"] == str(path)
    assert (path / "memory.limit_in_bytes").read_text() == str(64 * MIB)
    # socket buffers are charged in v1 once the TCP limit is set
    assert (path / "memory.kmem.tcp.limit_in_bytes").read_text() == str(64 * MIB)


def test_v1_figures_count_huge_pages_as_anonymous_memory(tmp_path):
    (tmp_path / "memory.stat").write_text(f"cache {3 * MIB}\nrss {MIB}\nrss_huge {2 * MIB}\n"
                                          f"shmem 0\n")
    (tmp_path / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    (tmp_path / "memory.usage_in_bytes").write_text(f"{6 * MIB}\n")
    (tmp_path / "memory.max_usage_in_bytes").write_text(f"{64 * MIB}\n")
    figures = memcap.memcap_read(str(tmp_path), memcap.V1)
    assert figures == {"oom_kills": 2, "usage_mb": 6.0, "peak_mb": 64.0, "anon_mb": 3.0,
                       "file_mb": 3.0, "sock_mb": None, "kernel_mb": None}


def test_no_memory_hierarchy_at_all_says_so_for_both(monkeypatch):
    monkeypatch.setattr(procfs, "cgroup2_mount", lambda: None)
    monkeypatch.setattr(procfs, "cgroup1_mount", lambda c: None)
    why = memcap.memcap_open("cap3-server", 64)["unavailable"]
    assert "no cgroup2 hierarchy is mounted" in why and "neither v2's controller nor v1's" in why


class CappingHost(FakeHost):
    """A FakeHost whose memory-cap steps answer from a table."""

    def __init__(self, answer: dict, figures: dict | None = None):
        super().__init__()
        self.answer, self.figures = answer, figures or {}

    def call(self, op, **args):
        self.calls.append((op, args))
        return {"memcap_open": self.answer, "memcap_read": self.figures,
                "memcap_close": True}.get(op) if op.startswith("memcap") else super().call(op, **args)


def test_an_oom_kill_in_the_caps_cgroup_is_the_reason_and_nothing_else_is():
    cap = MemoryCap.open(CappingHost({"path": "/cg/cap", "procs": "/cg/cap/cgroup.procs",
                                      "kind": memcap.V1, "limit_mb": 96},
                                     {"oom_kills": 1}), "server", 96)
    assert cap.argv(["srv"])[-2:] == ["/cg/cap/cgroup.procs", "srv"]
    assert cap.oom_reason() == ("killed by the kernel's OOM killer: the memory cap of 96 MiB "
                                "(cgroup v1 memory.limit_in_bytes) was reached (1 OOM kill in "
                                "its cgroup)")
    assert cap.oom_reason({"oom_kills": 0}) is None
    cap.close()
    assert cap.read() is None and [op for op, _ in cap.host.calls].count("memcap_close") == 1


def test_a_host_that_cannot_cap_is_told_apart_from_one_that_can():
    assert why_not(CappingHost({"unavailable": "no memory cgroup here"}), 64) == \
        "no memory cgroup here"
    assert "NotImplementedError" in why_not(FakeHost(), 64)
    host = CappingHost({"path": "/cg/p", "procs": "/cg/p/cgroup.procs", "kind": memcap.V2,
                        "limit_mb": 64})
    assert why_not(host, 64) is None and ("memcap_close", {"path": "/cg/p"}) in host.calls


def test_the_preflight_refuses_a_cap_the_server_host_cannot_apply(tmp_path):
    class NoCgroups(RecordingHost):
        def call(self, op, **args):
            return {"unavailable": "no memory cgroup hierarchy is mounted"}
    host = NoCgroups("here", tools=("wrk",))
    ctx = Session(Settings(results_dir=tmp_path, server_memory="128M"),
                  hosts=all_on(host)).context
    said = " | ".join(preflight.problems(ctx, cases_of(spec(tmp_path)), all_on(host), FOR_RUN))
    assert "--server-memory 128M cannot be applied on here: no memory cgroup hierarchy" in said


def test_a_role_born_in_a_v2_cap_is_counted_there_never_moved_or_removed():
    host = FakeHost()
    cgroups = RoleCgroups({"server": host}, adopted={"server": "/cg/cap"}).open()
    cgroups.place("server", [os.getpid()])
    cgroups.close()
    assert cgroups.paths == {"server": "/cg/cap"}
    assert [op for op, _ in host.calls] == []       # nothing opened, placed or closed


def test_a_capped_runs_header_says_the_cap_and_the_samples_it_ended():
    def sample(reason=None, kind=memcap.V1):
        return {"reason": reason, "server_process": {"memory_cap": {"kind": kind}}}
    doc = {"settings": {"server_memory": "128M"},
           "cases": [{"samples": [sample(), sample("server exited during the run (code -9): "
                                                   "killed by the kernel's OOM killer: ...")]}]}
    assert memory_cap_sentence(doc) == (
        " Memory cap: every server's process tree at 128M (cgroup v1 memory.limit_in_bytes); "
        "1 sample(s) failed by the kernel's OOM killer (the server or proxy killed, or a "
        "process of it).")
    assert memory_cap_sentence({"settings": {}, "cases": []}) == ""
    behind = {"settings": {"proxy_memory": "16M"}, "cases": [{"samples": [
        {"reason": "killed by the kernel's OOM killer: the proxy's ...",
         "proxy_memory_cap": {"kind": memcap.V2}}]}]}
    assert memory_cap_sentence(behind) == (
        " Memory cap: every proxy's at 16M (cgroup2 memory.max); 1 sample(s) failed by the "
        "kernel's OOM killer (the server or proxy killed, or a process of it).")
