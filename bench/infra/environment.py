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
import socket
import subprocess
import tomllib
from importlib import metadata
import hashlib
from pathlib import Path

from bench.core.settings import usable_cpus
from bench.infra.host import LOCAL
from bench.paths import REPO


def _first_line(argv: list[str]) -> str | None:
    if not LOCAL.which(argv[0]):
        return None
    try:
        done = LOCAL.run(argv, timeout=10)
    except OSError:
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_model() -> str | None:
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return None


def git_state() -> dict:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                                 text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None
    status = git("status", "--porcelain", "--untracked-files=no")
    diff = git("diff", "HEAD") if status else ""
    # which uncommitted changes: --resume refuses to mix samples of different code
    return {"commit": git("rev-parse", "HEAD"),
            "dirty": None if status is None else bool(status),
            "diff_sha": hashlib.sha256(diff.encode()).hexdigest()[:16] if diff else None}


def machine() -> dict:
    import psutil
    freq = psutil.cpu_freq()
    return {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "kernel": platform.release(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable_cpus(),
        "cpu_governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        "cpu_mhz_max": round(freq.max) if freq and freq.max else None,
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def tools() -> dict:
    return {
        "python": platform.python_version(),
        "wrk": _first_line(["wrk", "-v"]),
        "rustc": _first_line(["rustc", "--version"]),
        "go": _first_line(["go", "version"]),
        "node": _first_line(["node", "--version"]),
        # the open-model load generator, and the ceiling server and reverse proxy
        "oha": _first_line(["oha", "--version"]),
        "nginx": _first_line(["nginx", "-v"]),
    }


def environment() -> dict:
    """The environment block of a run (databases' versions are added once they are up)."""
    return {**machine(), "tools": tools(), "git": git_state(),
            # kept at the top level too: schema 1 readers and the tables' header use them
            "python": platform.python_version(), "git_commit": git_state()["commit"]}


def fingerprint(env: dict) -> str:
    """A stable id of the machine (not of the run): results of one box form a series.

    The host name plus a hash of what shapes performance (CPU, cores, memory, kernel);
    BENCH_MACHINE_ID names the machine instead, e.g. for CI runners whose host names
    change every run but whose hardware class does not."""
    if os.environ.get("BENCH_MACHINE_ID"):
        return os.environ["BENCH_MACHINE_ID"]
    keys = ("hostname", "cpu_model", "cpu_count", "memory_gb", "kernel")
    raw = json.dumps({k: env.get(k) for k in keys}, sort_keys=True)
    host = "".join(c if c.isalnum() or c in "-_" else "-" for c in str(env.get("hostname")))
    return f"{host[:40]}-{hashlib.sha256(raw.encode()).hexdigest()[:8]}"


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


def _go(folder: Path) -> dict:
    out, block = {}, False
    for line in (folder / "go.mod").read_text().splitlines():
        if "// indirect" in line:          # only what the server itself requires
            continue
        line = line.split("//")[0].strip()
        if line.startswith("require ("):
            block = True
            continue
        if block and line == ")":
            block = False
            continue
        parts = line.removeprefix("require ").split()
        if (block or line.startswith("require ")) and len(parts) >= 2:
            out[parts[0]] = parts[1]
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
