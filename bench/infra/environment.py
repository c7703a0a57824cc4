"""The fingerprint of a run: the machine, the tools, the code. Enough to tell whether two
runs can be compared, and to say in one sentence under the tables what produced them.
What each server's dependencies were: bench.infra.versions."""
from __future__ import annotations

import hashlib
import os
import platform

from bench.core.machine import fingerprint  # noqa: F401 - the run's machine id, kept here too
from bench.infra.host import LOCAL, Host
from bench.infra.seam import TOOL_COMMANDS, first_line
from bench.paths import REPO


GIT_TIMEOUT_S = 30


def git_state(host: Host = LOCAL, folder: str | None = None) -> dict:
    """The code this project's checkout on `host` holds (on a remote host: its workdir;
    `folder`: another checkout, such as a version `ab` measures):
    the commit, whether it has uncommitted changes to tracked files, and which ones (the
    sha256 of `git diff HEAD`: the same diff on two machines is the same code). The one
    place git is asked, for the run's environment block, the pinning of remote hosts in
    the preflight, their record in the topology and `ab`'s versions. Commit None: not a git checkout, or
    no git there; "error" then says what git said."""
    folder = folder or host.project_path(REPO)
    said: list[str] = []               # what git said when it failed, for the message

    def git(*args: str) -> str | None:
        try:
            done = host.run(["git", "-C", folder, *args], timeout=GIT_TIMEOUT_S)
        except OSError as exc:          # no git on that host
            said.append(f"git: {exc.strerror or exc}")
            return None
        if done.returncode == 0 and not done.timed_out:
            return done.stdout.strip()
        said.append(first_line_of(done.stderr) or f"git {args[0]} exited {done.returncode}")
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    diff = git("diff", "HEAD") if status else ""
    state = {"commit": git("rev-parse", "HEAD"),
             "dirty": None if status is None else bool(status),
             "diff_sha256": hashlib.sha256(diff.encode()).hexdigest() if diff else None}
    if state["commit"] is None:
        state["error"] = said[0][:200]
    return state


def first_line_of(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def machine() -> dict:
    """This machine's part of the environment block (LOCAL.machine() without "python",
    which tools() records)."""
    block = LOCAL.machine()
    block.pop("python", None)
    return block


def tools() -> dict:
    """The versions of the tools on this machine (the harness's Python first)."""
    return {"python": platform.python_version(),
            **{name: first_line(LOCAL, argv) for name, argv in TOOL_COMMANDS.items()}}


def environment() -> dict:
    """The environment block of a run (databases' versions are added once they are up)."""
    git = git_state()
    # "diff_sha": the short form --resume compared before diff_sha256 was recorded, kept
    # so that a run stored before can still be resumed
    git["diff_sha"] = git["diff_sha256"][:16] if git["diff_sha256"] else None
    from bench.infra.limits import kernel_settings, raise_open_files
    soft, hard = raise_open_files()
    return {**machine(), "tools": tools(), "git": git, **build_env(),
            # what many connections rely on (bench.infra.limits): the harness's open-file
            # limit, which every server and generator it starts inherits, and the kernel's
            "open_files": {"soft": soft, "hard": hard}, "kernel_settings": kernel_settings(),
            # kept at the top level too: schema 1 readers and the tables' header use them
            "python": platform.python_version(), "git_commit": git["commit"]}


def build_env() -> dict:
    """Build settings given through the environment rather than the servers' files
    (a user may set CARGO_PROFILE_RELEASE_* to build another profile), so a run built with
    them says so; {} when none is set."""
    found = {k: v for k, v in sorted(os.environ.items()) if k.startswith("CARGO_PROFILE_")}
    return {"build_env": found} if found else {}


# ------------------------------------------------------------------ server versions
