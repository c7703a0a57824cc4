"""Every host pinned: a remote host whose checkout holds other code than the harness's
(another commit, or other uncommitted changes) is refused before anything runs, and the
code each remote host held is recorded in the topology. Remote checkouts are FakeHosts
whose `git` answers as a checkout at a given commit with a given diff would."""
from __future__ import annotations

import hashlib

import pytest

from bench.core.settings import Settings
from bench.infra import topology
from bench.infra.environment import git_state
from bench.infra.fake import FakeHost
from bench.infra.hosts import Hosts, HostSpec
from bench.infra.seam import Completed
from bench.session import FOR_BUILD, Session, preflight

A = "a" * 40
B = "b" * 40
PATCH = "diff --git a/x b/x\n-old\n+new"


def checkout(name: str, commit: str | None, diff: str = "") -> FakeHost:
    """A host whose project folder is a git checkout at `commit` (None: not a git
    repository) with `diff` as its uncommitted changes."""
    host = FakeHost(name, remote=True)

    def git(argv: list[str]) -> Completed:
        if commit is None:
            return Completed(argv, 128, "", "fatal: not a git repository", 0.0, 0.0)
        asked = argv[3]               # git -C <folder> <command> ...
        out = {"rev-parse": commit, "status": " M x" if diff else "", "diff": diff}[asked]
        return Completed(argv, 0, out + "\n", "", 0.0, 0.0)
    host.on_run("git", git)
    return host


class FakeHosts(Hosts):
    """The server's role on `server` (a remote machine); the others on this machine."""

    def __init__(self, server: FakeHost):
        super().__init__({"server": HostSpec("server", "10.0.0.3")})
        self.server = server

    def for_role(self, role):
        return self.server if role == "server" else self.local

    def open(self):                   # a FakeHost needs no connection
        return self


def refused(ours: FakeHost, theirs: FakeHost) -> list[str]:
    return preflight.pin_problems(theirs, "server", git_state(ours))


def test_git_state_reads_the_commit_and_which_changes_through_the_host():
    state = git_state(checkout("there", A, PATCH))
    assert state == {"commit": A, "dirty": True,
                     "diff_sha256": hashlib.sha256(PATCH.encode()).hexdigest()}
    assert git_state(checkout("there", A)) == {"commit": A, "dirty": False, "diff_sha256": None}
    assert git_state(checkout("there", None)) == {"commit": None, "dirty": None,
                                                  "diff_sha256": None,
                                                  "error": "fatal: not a git repository"}


def test_a_remote_checkout_at_the_harness_commit_passes():
    assert refused(checkout("here", A), checkout("there", A)) == []


def test_a_remote_checkout_at_another_commit_is_refused_naming_the_host_and_both_commits():
    [problem] = refused(checkout("here", A), checkout("there", B))
    assert problem.startswith("there (server) runs other code than the harness")
    assert f"at {B[:12]}, the harness's at {A[:12]}" in problem
    assert "another commit" in problem and f"check out {A[:12]} there" in problem


def test_uncommitted_changes_on_the_remote_host_only_are_refused():
    [problem] = refused(checkout("here", A), checkout("there", A, PATCH))
    assert f"at {A[:12]} with changes, the harness's at {A[:12]} (" in problem
    assert "uncommitted changes there that the harness's checkout has not" in problem
    assert "another commit" not in problem


def test_uncommitted_changes_on_the_harness_only_or_other_ones_are_refused():
    [problem] = refused(checkout("here", A, PATCH), checkout("there", A))
    assert "uncommitted changes in the harness's checkout that it has not" in problem
    [problem] = refused(checkout("here", A, PATCH), checkout("there", A, PATCH + "er"))
    assert "other uncommitted changes than the harness's" in problem


def test_the_same_uncommitted_changes_on_both_sides_are_the_same_code():
    assert refused(checkout("here", A, PATCH), checkout("there", A, PATCH)) == []


def test_a_remote_folder_that_is_not_a_git_repository_is_refused_saying_clone_it():
    [problem] = refused(checkout("here", A), checkout("there", None))
    assert problem.startswith("there (server): the project in ")
    assert "is not a git checkout (git said: fatal: not a git repository)" in problem
    assert "clone it there" in problem
    assert f"check out {A[:12]}" in problem


def test_a_harness_outside_git_cannot_vouch_for_a_remote_host():
    [problem] = refused(checkout("here", None), checkout("there", A))
    assert "is not a git checkout" in problem and "there (server)" in problem


def test_the_preflight_refuses_a_remote_host_at_another_commit_before_the_session_opens(
        tmp_path):
    ours = git_state()["commit"]
    other = "0" * 40 if ours != "0" * 40 else B
    hosts = FakeHosts(checkout("there", other))
    with pytest.raises(preflight.PreflightError) as caught:
        with Session(Settings(results_dir=tmp_path), hosts=hosts, needs=FOR_BUILD):
            pytest.fail("opened with a remote host at another commit")
    [problem] = caught.value.problems
    assert "there (server) runs other code than the harness" in problem
    assert f"at {other[:12]}" in problem and f"the harness's at {ours[:12]}" in problem


def test_the_topology_records_each_remote_host_code():
    hosts = FakeHosts(checkout("there", A, PATCH))
    recorded = topology.record(hosts)["hosts"]["server"]
    assert recorded["git"] == {"commit": A, "dirty": True,
                               "diff_sha256": hashlib.sha256(PATCH.encode()).hexdigest()}
    assert recorded["hostname"] == "there"      # next to its fingerprint
