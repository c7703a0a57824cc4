"""Start the nginx reverse proxy: BENCH_PROXY_* / BENCH_UPSTREAM_* / BENCH_WORKERS ->
nginx.conf -> exec nginx (the rendering code is servers/nginx/nginx_launch.py, on
PYTHONPATH through proxy.toml's [env])."""
from __future__ import annotations

import os
from pathlib import Path

try:
    from nginx_launch import env, env_int, exec_nginx, listen_address, main
except ImportError as exc:      # proxy.toml's [env] puts servers/nginx on PYTHONPATH
    raise SystemExit(f"nginx proxy: cannot import nginx_launch ({exc}); run it through the "
                     f"harness (proxy.toml sets PYTHONPATH to servers/nginx)") from None

HERE = Path(__file__).resolve().parent

# What the clients speak to nginx (BENCH_PROXY_PROTOCOL, bench.core.protocols): its
# listen parameters. nginx 1.22 turns HTTP/2 on per listen socket: with ssl it is offered
# by ALPN beside http/1.1 (a client that asks for h2 gets it), without ssl it is h2c with
# prior knowledge only (no Upgrade: nginx does not implement it).
LISTEN = {"h1": "", "h1-tls": " ssl", "h2": " ssl http2", "h2c": " http2"}

# The run's certificate (bench/infra/certs.py: ECDSA P-256) and one TLS version and
# cipher suite for every server and proxy (TLS 1.3, TLS_AES_128_GCM_SHA256: the
# suite every TLS 1.3 stack must implement, RFC 8446 9.1). A session cache as
# deployments configure it (nginx's default is none); the load generators open their
# connections once, so resumption never decides a figure.
TLS = """        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.3;
        ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256;
        ssl_session_cache shared:webbench_tls:10m;
        ssl_session_timeout 10m;"""


def run() -> None:
    port = env_int("BENCH_PROXY_PORT")
    protocol = os.environ.get("BENCH_PROXY_PROTOCOL", "h1")
    if protocol not in LISTEN:
        raise SystemExit(f"nginx proxy: BENCH_PROXY_PROTOCOL={protocol!r}; known: "
                         f"{', '.join(LISTEN)}")
    tls = TLS.format(cert=env("BENCH_TLS_CERT"), key=env("BENCH_TLS_KEY")) \
        if "ssl" in LISTEN[protocol] else ""
    exec_nginx("proxy", HERE / "nginx.conf.template", port, {
        "listen": listen_address(env("BENCH_PROXY_HOST"), port),
        "listen_protocol": LISTEN[protocol], "tls": tls,
        "upstream": listen_address(env("BENCH_UPSTREAM_HOST"), env_int("BENCH_UPSTREAM_PORT")),
        "workers": str(env_int("BENCH_WORKERS", 1, 1024)),
    })


if __name__ == "__main__":
    main(run)
