"""The fingerprint of a run: the machine, the tools, and every framework and driver version
each server really used. Enough to tell whether two runs can be compared, and to say in
one sentence under the tables what produced them.

Versions are read from what a server folder ships (Cargo.lock, requirements.txt against
the installed virtualenv, go.mod, package-lock.json), so no framework is named here and a
new server's versions are recorded without a line of code.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import tomllib
from importlib import metadata
from pathlib import Path

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
    return {**machine(), "tools": tools(), "git": git, **build_env(),
            # kept at the top level too: schema 1 readers and the tables' header use them
            "python": platform.python_version(), "git_commit": git["commit"]}


def build_env() -> dict:
    """Build settings given through the environment rather than the servers' files
    (a user may set CARGO_PROFILE_RELEASE_* to build another profile), so a run built with
    them says so; {} when none is set."""
    found = {k: v for k, v in sorted(os.environ.items()) if k.startswith("CARGO_PROFILE_")}
    return {"build_env": found} if found else {}


# ------------------------------------------------------------------ server versions

_REQ = re.compile(r"^\s*([A-Za-z0-9_.\-\[\]]+)\s*==\s*([^\s;#]+)")


def _python_requirements(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        m = _REQ.match(line)
        if m:
            name = re.sub(r"\[.*\]", "", m.group(1))
            try:
                out[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                out[name] = f"{m.group(2)} (pinned, not installed)"
    return out


def _cargo(folder: Path) -> dict:
    """The server's direct dependencies, and those of its path dependencies (a shared
    crate such as servers/_rscommon), at the versions Cargo.lock pins."""
    deps = tomllib.loads((folder / "Cargo.toml").read_text()).get("dependencies", {})
    direct = set(deps)
    for spec in deps.values():
        if isinstance(spec, dict) and "path" in spec:
            shared = tomllib.loads((folder / spec["path"] / "Cargo.toml").read_text())
            direct |= set(shared.get("dependencies", {}))
    # a workspace member's lock file is the workspace's (servers/Cargo.lock)
    lock_path = next((d / "Cargo.lock" for d in (folder, *folder.parents)
                      if (d / "Cargo.lock").exists()), folder / "Cargo.lock")
    lock = tomllib.loads(lock_path.read_text())
    return {p["name"]: p["version"] for p in lock.get("package", []) if p["name"] in direct}


def _go_mod(folder: Path) -> tuple[dict, dict, dict]:
    """(direct requirements, every requirement, local replacements) of folder/go.mod:
    module -> version, module -> version, module -> the folder it is replaced by."""
    direct, every, local, block = {}, {}, {}, ""
    for raw in (folder / "go.mod").read_text().splitlines():
        line = raw.split("//")[0].strip()
        if line in ("require (", "replace ("):
            block = line.split()[0]
            continue
        if block and line == ")":
            block = ""
            continue
        kind = block or line.split(" ", 1)[0]
        parts = line.removeprefix(f"{kind} ").split() if not block else line.split()
        if kind == "require" and len(parts) >= 2:
            every[parts[0]] = parts[1]
            if "// indirect" not in raw:          # what the module itself requires
                direct[parts[0]] = parts[1]
        elif kind == "replace" and "=>" in parts:
            target = parts[parts.index("=>") + 1:]
            if len(target) == 1 and target[0].startswith((".", "/")):   # a local folder
                local[parts[0]] = (folder / target[0]).resolve()
    return direct, every, local


def _go(folder: Path) -> dict:
    """The server's direct requirements, and those of the local modules it is built with
    (a shared module such as servers/_gocommon, taken through a `replace` to a folder),
    at the versions the server's go.mod selects."""
    direct, every, local = _go_mod(folder)
    out = {m: v for m, v in direct.items() if m not in local}
    for shared in local.values():
        if (shared / "go.mod").is_file():
            for module, version in _go_mod(shared)[0].items():
                out.setdefault(module, every.get(module, version))
    return out


def _npm(folder: Path) -> dict:
    package = json.loads((folder / "package.json").read_text())
    lock = json.loads((folder / "package-lock.json").read_text())
    packages = lock.get("packages", {})
    return {name: packages.get(f"node_modules/{name}", {}).get("version", spec)
            for name, spec in package.get("dependencies", {}).items()}


VERSION_SOURCES = (("requirements.txt", _python_requirements),
                   ("Cargo.toml", _cargo), ("go.mod", _go), ("package-lock.json", _npm))


def server_versions(folder: Path) -> dict:
    """Direct dependencies and their versions, from whatever lock files the folder has."""
    out: dict = {}
    for name, reader in VERSION_SOURCES:
        path = folder / name
        if path.exists():
            try:
                out.update(reader(path if reader is _python_requirements else folder))
            except (OSError, ValueError, KeyError, tomllib.TOMLDecodeError) as exc:
                out[f"({name})"] = f"unreadable: {exc}"
    return out
