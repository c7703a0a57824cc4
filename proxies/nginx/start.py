"""Start the nginx reverse proxy: BENCH_PROXY_* / BENCH_UPSTREAM_* / BENCH_WORKERS ->
nginx.conf -> exec nginx (the rendering code is servers/nginx/nginx_launch.py, on
PYTHONPATH through proxy.toml's [env])."""
from __future__ import annotations

from pathlib import Path

try:
    from nginx_launch import env, env_int, exec_nginx, listen_address, main
except ImportError as exc:      # proxy.toml's [env] puts servers/nginx on PYTHONPATH
    raise SystemExit(f"nginx proxy: cannot import nginx_launch ({exc}); run it through the "
                     f"harness (proxy.toml sets PYTHONPATH to servers/nginx)") from None

HERE = Path(__file__).resolve().parent


def run() -> None:
    port = env_int("BENCH_PROXY_PORT")
    exec_nginx("proxy", HERE / "nginx.conf.template", port, {
        "listen": listen_address(env("BENCH_PROXY_HOST"), port),
        "upstream": listen_address(env("BENCH_UPSTREAM_HOST"), env_int("BENCH_UPSTREAM_PORT")),
        "workers": str(env_int("BENCH_WORKERS", 1, 1024)),
    })


if __name__ == "__main__":
    main(run)
