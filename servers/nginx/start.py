"""Start the nginx ceiling: the harness's BENCH_* environment -> nginx.conf -> exec nginx.

Everything per request is in nginx.conf.template; this script only turns the
environment into config text (see nginx_launch.py for where it goes and why exec).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from nginx_launch import LaunchError, env, env_int, exec_nginx, listen_address, main, quoted  # noqa: E402


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
    }


def run() -> None:
    settings = values()
    exec_nginx("server", HERE / "nginx.conf.template", env_int("BENCH_PORT"), settings)


if __name__ == "__main__":
    main(run)
