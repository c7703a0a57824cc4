"""`run_bench.py serve`: one server, in the foreground, set up exactly as a benchmark case
would set it up, with ready-to-paste curl commands. Ctrl-C stops it all."""
from __future__ import annotations

import shlex
import time

from bench import config, db, lifecycle, provision
from bench.config import Settings, Variant
from bench.manifest import ServerSpec


def curl_examples(base: str, token: str, with_db: bool) -> list[str]:
    t = f"-H {shlex.quote('token: ' + token)}"
    lines = [f"curl -s {base}/ping/"]
    if with_db:
        lines += [f"curl -s {t} {base}/user/42/",
                  f"curl -s {t} -X PATCH -H 'Content-Type: application/json' "
                  f"-d '{{\"username\": \"alice\", \"email\": \"alice@example.com\"}}' {base}/user/42/",
                  f"curl -s -i {base}/user/42/            # no token: 401"]
    lines += [f"curl -s {t} '{base}/plain/?param1=a&param2=b&param3=c'",
              f"curl -s {t} '{base}/to_json/?param1=a&param2=b&param3=c'",
              f"wrk -t1 -c16 -d5s -H {shlex.quote('token: ' + token)} {base}/user/1/"
              if with_db else
              f"wrk -t1 -c16 -d5s -H {shlex.quote('token: ' + token)} '{base}/plain/?param1=a'"]
    return lines


def serve(settings: Settings, specs: dict[str, ServerSpec], server_id: str, database: str,
          orm: bool) -> int:
    if server_id not in specs:
        raise config.SelectionError(f"unknown server {server_id!r}; valid: {', '.join(sorted(specs))}")
    spec = specs[server_id]
    if database != "none" and (database, orm) not in spec.variants():
        valid = ", ".join(f"--db {d}{' --orm' if o else ''}" for d, o in spec.variants())
        raise config.SelectionError(f"{server_id} has no {database}/{'orm' if orm else 'raw'} "
                                    f"variant; valid: {valid}, --db none")
    variant = Variant(spec, database, orm and database != "none")
    provider, endpoint = None, None
    server = None
    try:
        if database != "none":
            provider = provision.provider(settings.db_mode, [database],
                                          ports={"postgres": settings.pg_port,
                                                 "mysql": settings.mysql_port},
                                          dsns={"postgres": settings.postgres_dsn,
                                                "mysql": settings.mysql_dsn},
                                          keep=settings.keep_db)
            endpoint = provider.start()[database]
            db.restore(endpoint)
        if spec.build:
            print(f"building {spec.id} ...", flush=True)
            lifecycle.build(spec, settings, lifecycle.CACHE_DIR / f"build-{spec.id}.log")
        server = lifecycle.ServerProcess(variant, settings, endpoint, log_path=None)
        server.start()
        server.wait_ready()
        base = server.base_url
        print(f"\n{spec.id} ({variant.key}) is ready at {base}  "
              f"[{settings.workers} workers, {server.pool_size} DB connection(s) per process]")
        if endpoint:
            print(f"database: {endpoint.engine} at {endpoint.host}:{endpoint.port}, "
                  f"db {endpoint.name}, user {endpoint.user}")
        print("\ntry:\n  " + "\n  ".join(curl_examples(base, settings.token, endpoint is not None)))
        print("\nCtrl-C stops the server and the databases.", flush=True)
        with lifecycle.sigterm_as_interrupt():
            while server.alive():
                time.sleep(0.5)
        print(f"{spec.id} exited with code {server.proc.returncode}")
        return 1
    except KeyboardInterrupt:
        print("\nstopping ...")
        return 0
    except lifecycle.ServerError as exc:
        print(f"error: {exc}")
        return 1
    finally:
        if server is not None:
            server.stop()
        if provider is not None:
            provider.stop()
