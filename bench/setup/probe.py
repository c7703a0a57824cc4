"""Is a tool on this machine, where, and which version: what `doctor` prints and what a
server's availability is decided on. Installs nothing and takes well under a second per
tool (each probe is one `--version`-like call, bounded by a timeout).
"""
from __future__ import annotations

import functools

import glob
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# Where Debian's packages put programs that a user's PATH may lack (sshd in /usr/sbin,
# PostgreSQL in its versioned folder); toolchains are found on PATH only, so that a PATH
# without one is a machine without it (the Makefile adds rustup's and the Go tarball's
# usual folders to PATH).
SYSTEM_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")
# a tool's version: its first dotted number (`go1.26.8`, `OpenSSH_9.2p1`, `v20.20.2`)
VERSION = re.compile(r"(\d+(?:\.\d+)+)")
# the argv that makes each tool say its version; the default is `<tool> --version`
VERSION_ARGS = {"wrk": ["-v"], "nginx": ["-v"], "sshd": ["-V"], "ip": ["-V"],
                "go": ["version"], "haproxy": ["-v"], "caddy": ["version"], "k6": ["version"],
                "docker-compose": ["version", "--short"]}
# tools the set-up builds into the harness's own tool folder (scripts/install_k6.sh's
# GOBIN, install_h2spec.sh's and install_docker-compose.sh's -o), looked for there before
# PATH: the one the harness runs (bench/load/k6.py, bench/verify/h2spec.py,
# bench/infra/containers/engine.py)
TOOL_DIR_TOOLS = ("k6", "h2spec", "docker-compose")
PROBE_TIMEOUT_S = 10


@dataclass(frozen=True)
class Found:
    tool: str
    path: str | None           # None: not found
    version: str | None        # None: found, but it did not say (or says no version)

    @property
    def present(self) -> bool:
        return self.path is not None


def version_tuple(text: str) -> tuple[int, ...]:
    match = VERSION.search(text) or re.search(r"\d+", text)
    return tuple(int(p) for p in match.group(0).split(".")) if match else ()


def at_least(version: str | None, minimum: str | None) -> bool:
    if minimum is None:
        return True
    return version is not None and version_tuple(version) >= version_tuple(minimum)


def postgres_bindir() -> str | None:
    """The newest of Debian's versioned PostgreSQL folders (the harness's database code
    looks there too), or wherever `postgres` is on PATH."""
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"),
                  key=lambda d: int(d.split("/")[-2]) if d.split("/")[-2].isdigit() else 0)
    for folder in reversed(dirs):
        if os.access(f"{folder}/postgres", os.X_OK):
            return folder
    found = shutil.which("postgres")
    return str(Path(found).parent) if found else None


def tool_dir() -> Path:
    from bench.paths import CACHE_DIR
    return CACHE_DIR / "bin"


def which(command: str) -> str | None:
    if command in TOOL_DIR_TOOLS and os.access(tool_dir() / command, os.X_OK):
        return str(tool_dir() / command)
    if command == "postgres":
        folder = postgres_bindir()
        return f"{folder}/postgres" if folder else None
    path = os.environ.get("PATH", "")
    return shutil.which(command, path=os.pathsep.join([path, *SYSTEM_DIRS]))


def say_version(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = VERSION.search(done.stdout + "\n" + done.stderr)
    return match.group(1) if match else None


def bootstrap_python() -> str:
    """The Python the virtualenv is made from (the Makefile's PYTHON_BOOTSTRAP), or this one."""
    return os.environ.get("PYTHON_BOOTSTRAP") and shutil.which(os.environ["PYTHON_BOOTSTRAP"]) \
        or sys.executable


def _python_part(part: str) -> Found:
    python = bootstrap_python()
    if part == "venv":
        done = subprocess.run([python, "-c", "import venv, ensurepip"], capture_output=True,
                              timeout=PROBE_TIMEOUT_S)
        return Found(f"python:{part}", python if done.returncode == 0 else None, None)
    if part == "Python.h":
        include = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
            capture_output=True, text=True, timeout=PROBE_TIMEOUT_S).stdout.strip() \
            if python != sys.executable else sysconfig.get_paths()["include"]
        header = Path(include) / "Python.h"
        return Found(f"python:{part}", str(header) if header.exists() else None, None)
    raise ValueError(f"unknown python:{part}")


def find(tool: str) -> Found:
    """Where `tool` (a setup/packages.txt name) is, and its version."""
    if tool.startswith("file:"):
        path = tool[len("file:"):]
        return Found(tool, path if Path(path).exists() else None, None)
    if tool.startswith("python:"):
        return _python_part(tool[len("python:"):])
    if tool.startswith("lib:"):
        name = tool[len("lib:"):]
        if not shutil.which("pkg-config"):
            return Found(tool, None, None)
        version = say_version(["pkg-config", "--modversion", name])
        return Found(tool, f"pkg-config {name}" if version else None, version)
    if tool in ("python", "python3"):
        # the Python servers run on the harness's own interpreter ({python}); the
        # virtualenv is made from the bootstrap one
        python = sys.executable if tool == "python" else bootstrap_python()
        return Found(tool, python, say_version([python, "--version"]))
    path = which(tool)
    if path is None:
        return Found(tool, None, None)
    return Found(tool, path, say_version([path, *VERSION_ARGS.get(tool, ["--version"])]))


@functools.lru_cache(maxsize=32)
def runtime_version(command: str) -> str | None:
    """The version of a server's runtime or compiler (its manifest's [toolchain]
    command), once per process: what bench.infra.versions records beside its packages."""
    return find(command).version


def memoized(find=None):
    """`find` that probes each tool once (doctor and a run ask about the same ones)."""
    find = find or globals()["find"]
    cache: dict[str, Found] = {}

    def cached(tool: str) -> Found:
        if tool not in cache:
            cache[tool] = find(tool)
        return cache[tool]
    return cached
