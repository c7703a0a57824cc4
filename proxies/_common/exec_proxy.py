"""Exec a reverse proxy's own binary in the foreground, for proxy.toml's `start`.

    exec_proxy.py <tool> "<install hint>" [--go-runtime] [--private-home] -- <args...>

HAProxy and Caddy read the harness's BENCH_* environment in their own config files
(HAProxy's "${VAR}", Caddy's {$VAR}), so no config is rendered; what is left is what
their config cannot say, done here:

- find the binary on PATH or where Debian puts it (/usr/sbin is not on every PATH), and
  say how to install it when it is missing (exit 2, one line: the harness shows the log);
- --go-runtime: GOMAXPROCS = the CPUs this process may run on (its affinity, so the
  harness's CPU pinning counts), at most BENCH_WORKERS: the README's fairness rule for a
  work-stealing runtime, as the harness applies it to gin and axum (Go's own default is
  the CPU count, which exceeds W when W is smaller);
- --private-home: HOME and the XDG folders point into a private folder under the temp
  directory (one per proxy and port, emptied at each start), so nothing the proxy
  writes for itself (Caddy's data and config autosave folders) lands in the user's home.

exec, not a child: the process the harness started *is* the proxy, so the process group's
signal reaches it and no Python process sits in the proxy's resource figures.
Standard library only.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

SYSTEM_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")


def fail(message: str) -> None:
    print(f"proxy start: {message}", file=sys.stderr, flush=True)
    sys.exit(2)


def find_binary(tool: str, hint: str) -> str:
    found = shutil.which(tool) or next(
        (str(Path(d) / tool) for d in SYSTEM_DIRS if os.access(Path(d) / tool, os.X_OK)), None)
    if not found:
        fail(f"{tool} is not installed: {hint}")
    return found


def workers() -> int:
    text = os.environ.get("BENCH_WORKERS", "")
    if not text.isdigit() or int(text) < 1:
        fail(f"BENCH_WORKERS={text!r} must be a whole number >= 1 (the harness sets it)")
    return int(text)


def private_home(tool: str) -> Path:
    """An empty 0700 folder for `tool` on the proxy's port, in a 0700 parent owned by this
    user (checked, so another user of /tmp cannot plant anything in it)."""
    parent = Path(tempfile.gettempdir()) / f"webbench-proxy-{os.geteuid()}"
    parent.mkdir(mode=0o700, exist_ok=True)
    info = parent.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        fail(f"{parent} must be a directory owned by uid {os.geteuid()} with mode 0700; "
             f"remove it and retry")
    home = parent / f"{tool}-{os.environ.get('BENCH_PROXY_PORT', 'port')}"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(mode=0o700)
    return home


def main(argv: list[str]) -> None:
    if "--" not in argv or len(argv) < 3:
        fail('usage: exec_proxy.py <tool> "<install hint>" [--go-runtime] [--private-home] -- <args...>')
    split = argv.index("--")
    (tool, hint, *flags), args = argv[:split], argv[split + 1:]
    unknown = set(flags) - {"--go-runtime", "--private-home"}
    if unknown:
        fail(f"unknown option(s) {sorted(unknown)}")
    binary = find_binary(tool, hint)
    env = dict(os.environ)
    if "--go-runtime" in flags:
        env["GOMAXPROCS"] = str(min(workers(), len(os.sched_getaffinity(0))))
    if "--private-home" in flags:
        home = private_home(tool)
        env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"),
                   XDG_CONFIG_HOME=str(home / "config"))
    print(f"{tool}: {binary} {' '.join(args)}"
          + (f" (GOMAXPROCS={env['GOMAXPROCS']})" if "GOMAXPROCS" in env else ""),
          file=sys.stderr, flush=True)
    os.execve(binary, [binary, *args], env)


if __name__ == "__main__":
    main(sys.argv[1:])
