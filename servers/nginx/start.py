"""Start the nginx ceiling: the harness's BENCH_* environment -> nginx.conf -> exec nginx.

Everything per request is in nginx.conf.template; this script only turns the
environment into config text (see nginx_launch.py for where it goes and why exec).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from nginx_launch import (LaunchError, env, env_int, exec_nginx, listen_address, main,  # noqa: E402
                          quoted, render)


def static_location() -> str:
    """location /static/ on BENCH_STATIC_DIR (static.conf.template), or, when the harness
    gives no folder, a comment: /static/ is then not mounted and answers location /'s 404.

    The folder goes into `alias` as a quoted string. `alias` evaluates variables, and
    nginx has no escape for `$`, so a path with one is refused rather than misread."""
    folder = os.environ.get("BENCH_STATIC_DIR", "")
    if not folder:
        return "# BENCH_STATIC_DIR is not set: no /static/ location"
    path = os.path.realpath(folder)
    if not os.path.isdir(path):
        raise LaunchError(f"BENCH_STATIC_DIR={folder!r} is not a directory")
    if "$" in path:
        raise LaunchError(f"BENCH_STATIC_DIR={folder!r}: nginx's alias would read its `$` "
                          f"as a variable")
    template = (HERE / "static.conf.template").read_text().rstrip("\n")
    # alias ends with / as the location does, so /static/x maps to <folder>/x
    return render(template, {"static_dir": quoted(path.rstrip("/") + "/")})


def values() -> dict[str, str]:
    database = env("BENCH_DB")
    if database != "none":
        # the ceiling answers from its config; a database case would measure nothing real
        raise LaunchError(f"BENCH_DB={database!r}: the nginx reference serves no database, "
                          f"only BENCH_DB=none")
    port = env_int("BENCH_PORT")
    ping = json.dumps({"server": env("BENCH_SERVER_ID"), "database": database,
                       "orm": env("BENCH_ORM") == "1"})
    return {
        "listen": listen_address(env("BENCH_HOST"), port),
        "workers": str(env_int("BENCH_WORKERS", 1, 1024)),
        "token": quoted(env("BENCH_TOKEN")),
        "ping_body": quoted(ping),
        "static_location": static_location(),
        "gzip": "on" if os.environ.get("BENCH_COMPRESSION") == "1" else "off",
    }


def run() -> None:
    settings = values()
    exec_nginx("server", HERE / "nginx.conf.template", env_int("BENCH_PORT"), settings)


if __name__ == "__main__":
    main(run)
