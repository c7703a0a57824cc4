"""The tools built from a registry (oha from crates.io, k6 and h2spec from the Go module
proxy) are installed when a run or a test first needs them, not at set-up: a `make test`
that never sends oha's load builds no oha (about 7 minutes of cargo on 2 cores). The
install scripts stay the one place that knows how (scripts/install_<tool>.sh), and
`make setup`-style installs through them still work by hand.

On this machine only: a remote host gets the tools through its own `make setup`.
"""
from __future__ import annotations

import fcntl
import subprocess
import sys

from bench.paths import CACHE_DIR, REPO

SCRIPTS = {"oha": "install_oha.sh", "k6": "install_k6.sh", "h2spec": "install_h2spec.sh",
           "docker-compose": "install_docker-compose.sh"}


def install(tool: str) -> str | None:
    """Runs the tool's install script (it does nothing when the pinned version is there
    already); None when it succeeded, else what went wrong with the log's tail. One
    install at a time on this machine (the test suite's workers may ask together)."""
    script = REPO / "scripts" / SCRIPTS[tool]
    logs = CACHE_DIR / "setup-logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{tool}.log"
    with open(logs / f"install-{tool}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        print(f"{tool} is needed and not installed: installing it now (first use; its "
              f"log: {log})", file=sys.stderr, flush=True)
        with open(log, "w") as out:
            done = subprocess.run(["bash", str(script)], stdout=out, stderr=subprocess.STDOUT,
                                  cwd=REPO)
    if done.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        return f"installing {tool} failed (exit {done.returncode}): " + " / ".join(tail)
    return None
