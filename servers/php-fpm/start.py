"""Start PHP-FPM and nginx in front of it: the harness's BENCH_* environment -> the two
configs in private folders -> PHP-FPM's master started in the foreground -> once its
socket exists, exec nginx.

The process the harness started becomes the nginx master (servers/nginx/nginx_launch.py's
exec_nginx, the ceiling's and the --behind nginx proxy's launcher), so no Python process
stays behind; PHP-FPM's master is its child, so the harness sees (and counts the CPU and
memory of) both in one process tree.

Stopping: PHP-FPM's master always calls setsid() at start-up (also with --nodaemonize),
so it leaves the process group the harness signals. It is started with a parent-death
signal instead (prctl PR_SET_PDEATHSIG = SIGTERM, kept across its exec): the group's
SIGTERM stops the nginx master (fast shutdown), and its exit sends SIGTERM to PHP-FPM's
master, which terminates its children and exits. If nginx never starts, the same
signal fires when this script exits. Measured under [notes] shutdown. Standard library
only.
"""
from __future__ import annotations

import ctypes
import os
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "nginx"))

from nginx_launch import (LaunchError, env, env_int, exec_nginx, listen_address, main,  # noqa: E402
                          private_prefix, quoted, render)

# Debian 12's PHP-FPM (package php-fpm -> php8.2-fpm); /usr/sbin is not on every PATH
FPM = "php-fpm8.2"
INSTALL_HINT = ("install it with `bash scripts/install_system_deps.sh` (setup/packages.txt: "
                "php-fpm, php-pgsql, php-mysql, php-apcu)")
SYSTEM_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")
SOCKET_WAIT_S = 10.0
DATABASES = ("none", "postgres", "mysql")
# the extensions this server loads, as Debian's packages install them (setup/packages.txt)
EXTENSIONS = {"pdo_pgsql": "php-pgsql", "pdo_mysql": "php-mysql", "apcu": "php-apcu"}
MODS = Path("/etc/php/8.2/mods-available")


PR_SET_PDEATHSIG = 1                   # <linux/prctl.h>


def die_with_parent() -> None:
    """In the child between fork and exec: SIGTERM when the parent (this process, later
    the nginx master) exits."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        os._exit(126)


def fpm_binary() -> str:
    path = os.environ.get("PATH", "")
    found = shutil.which(FPM, path=os.pathsep.join([path, *SYSTEM_DIRS]))
    if not found:
        raise LaunchError(f"{FPM} is not installed: {INSTALL_HINT}")
    return found


def fpm_user() -> tuple[str, list[str]]:
    """As root, PHP-FPM must be told which user its children run as (and allowed to run
    as root at all): the harness's own user, as every other server runs. As any other
    user the directives would only draw a notice."""
    if os.geteuid() != 0:
        return "; not root: the children run as the harness's user", []
    import grp
    import pwd
    user = pwd.getpwuid(os.geteuid()).pw_name
    group = grp.getgrgid(os.getegid()).gr_name
    return f"user = {user}\ngroup = {group}", ["--allow-to-run-as-root"]


def children() -> int:
    """pm.max_children: the DB budget, one persistent connection per child (README
    'Fairness'; manifest [notes] workers)."""
    return env_int("BENCH_DB_POOL_TOTAL", 1, 4096)


def start_fpm(port: int) -> tuple[subprocess.Popen, Path]:
    fpm_dir = private_prefix("php-fpm", port)
    socket = fpm_dir / "php-fpm.sock"
    user_directive, flags = fpm_user()
    conf = fpm_dir / "php-fpm.conf"
    conf.write_text(render((HERE / "php-fpm.conf.template").read_text(), {
        "fpm_dir": str(fpm_dir), "socket": str(socket), "children": str(children()),
        "user_directive": user_directive}))
    binary = fpm_binary()
    missing = [package for ext, package in EXTENSIONS.items() if not (MODS / f"{ext}.ini").exists()]
    if missing:
        raise LaunchError(f"PHP extension package(s) {', '.join(missing)} not installed: "
                          f"{INSTALL_HINT}")
    environment = dict(os.environ)
    # Debian's conf.d (the extensions) first, then this server's production settings
    environment["PHP_INI_SCAN_DIR"] = f":{HERE / 'ini'}"
    environment.setdefault("PDO_EMULATE_PREPARES", "0")
    environment.setdefault("BENCH_DB_PASSWORD", "")
    argv = [binary, "--nodaemonize", "--fpm-config", str(conf), *flags]
    print(f"php-fpm: {' '.join(argv)}", file=sys.stderr, flush=True)
    fpm = subprocess.Popen(argv, env=environment, stdin=subprocess.DEVNULL,
                           preexec_fn=die_with_parent)
    deadline = time.monotonic() + SOCKET_WAIT_S
    while not socket.exists():
        if fpm.poll() is not None:
            raise LaunchError(f"{FPM} exited with status {fpm.returncode} before listening "
                              f"(its log is above)")
        if time.monotonic() > deadline:
            fpm.kill()
            raise LaunchError(f"{FPM} did not create {socket} within {SOCKET_WAIT_S:.0f} s")
        time.sleep(0.02)
    return fpm, socket


# The HTTP workloads (servers/README.md): nginx, in front of PHP as in production, serves
# the static files (its own static handler, sendfile as Debian's nginx.conf has it) and
# compresses the answers (its gzip module; nginx-light has no brotli). Each is in the
# config only when the harness asks for it.
STATIC_LOCATION = """\
        # BENCH_STATIC_DIR: nginx's own static handler, public (no token, no PHP): ETag
        # and Last-Modified, 304 to a conditional GET, 206 to a range (its defaults).
        # nginx resolves '..' (also %2e%2e, ..%2f) before choosing a location, so a path
        # that climbs out never reaches this one (PHP answers it 404).
        location ^~ /static/ {{
            alias {folder};
            types {{ text/plain txt; }}
            default_type application/octet-stream;
            sendfile on;
            tcp_nopush on;
            log_not_found off;  # a missing file is a 404, not an error line each time
        }}"""
NO_STATIC = "        # no BENCH_STATIC_DIR: no /static/ location (PHP answers it 404)"
GZIP = """\
    # BENCH_COMPRESSION=1: nginx's gzip module, its defaults (level 1, from 20 bytes,
    # HTTP/1.1 requests, not for a request carrying Via) on what the server sends: JSON,
    # text (static files included) and HTML; Vary: Accept-Encoding"""
GZIP_ON = GZIP + """
    gzip on;
    gzip_vary on;
    gzip_types text/plain application/json;"""
NO_GZIP = "    # no BENCH_COMPRESSION: no compression (gzip is off by default)"


def static_location() -> str:
    """The /static/ location for BENCH_STATIC_DIR, or a comment when it is not set."""
    folder = os.environ.get("BENCH_STATIC_DIR", "")
    if not folder:
        return NO_STATIC
    if "$" in folder:
        raise LaunchError(f"BENCH_STATIC_DIR={folder!r}: nginx's alias would read '$' as a variable")
    return STATIC_LOCATION.format(folder=quoted(os.path.join(os.path.abspath(folder), "")))


def compression() -> str:
    return GZIP_ON if os.environ.get("BENCH_COMPRESSION") == "1" else NO_GZIP


def run() -> None:
    database = env("BENCH_DB")
    if database not in DATABASES:
        raise LaunchError(f"BENCH_DB={database!r} must be one of {', '.join(DATABASES)}")
    port = env_int("BENCH_PORT")
    workers = env_int("BENCH_WORKERS", 1, 1024)
    listen = listen_address(env("BENCH_HOST"), port)
    fpm, socket = start_fpm(port)
    try:
        exec_nginx("php-fpm-nginx", HERE / "nginx.conf.template", port, {
            "listen": listen, "workers": str(workers), "socket": str(socket),
            "script": str(HERE / "public" / "index.php"), "root": str(HERE / "public"),
            "static": static_location(), "compression": compression()})
    except BaseException:
        # nginx could not be started: PHP-FPM must not outlive this script
        fpm.terminate()
        fpm.wait(timeout=5)
        raise


if __name__ == "__main__":
    main(run)
