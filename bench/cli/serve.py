"""`run_bench.py serve`: one server, in the foreground, set up exactly as a benchmark case
would set it up, with ready-to-paste curl commands. Ctrl-C stops it all."""
from __future__ import annotations

import shlex
import time

from bench.core.manifest import BudgetError, ServerSpec
from bench.core.plan import Case, Variant, check_available
from bench.core.settings import DB_TESTS, NO_DB_TESTS, SelectionError, Settings
from bench.infra.lifecycle import running_server
from bench.infra.server import ServerError, db_budget
from bench.paths import CACHE_DIR
from bench.session import FOR_SERVE, Session, servers_unavailable


def curl_examples(base: str, token: str, with_db: bool, suite: bool = False) -> list[str]:
    t = f"-H {shlex.quote('token: ' + token)}"
    lines = [f"curl -s {base}/ping/"]
    if with_db:
        lines += [f"curl -s {t} {base}/user/42/",
                  f"curl -s {t} -X PATCH -H 'Content-Type: application/json' "
                  f"-d '{{\"username\": \"alice\", \"email\": \"alice@example.com\"}}' {base}/user/42/",
                  f"curl -s -i {base}/user/42/            # no token: 401"]
    if with_db and suite:
        lines += [f"curl -s {t} '{base}/queries/?n=5'", f"curl -s {t} '{base}/updates/?n=5'",
                  f"curl -s {t} {base}/fortunes/", f"curl -s {t} '{base}/cached/?n=5'"]
    lines += [f"curl -s {t} '{base}/plain/?param1=a&param2=b&param3=c'",
              f"curl -s {t} '{base}/to_json/?param1=a&param2=b&param3=c'",
              f"wrk -t1 -c16 -d5s -H {shlex.quote('token: ' + token)} {base}/user/1/"
              if with_db else
              f"wrk -t1 -c16 -d5s -H {shlex.quote('token: ' + token)} '{base}/plain/?param1=a'"]
    return lines


def serve(settings: Settings, specs: dict[str, ServerSpec], server_id: str, database: str,
          orm: bool, hosts=None) -> int:
    if server_id not in specs:
        raise SelectionError(f"unknown server {server_id!r}; valid: {', '.join(sorted(specs))}")
    check_available([server_id], servers_unavailable({server_id: specs[server_id]}, hosts))
    spec = specs[server_id]
    if database != "none" and (database, orm) not in spec.variants():
        valid = ", ".join(f"--db {d}{' --orm' if o else ''}" for d, o in spec.variants())
        raise SelectionError(f"{server_id} has no {database}/{'orm' if orm else 'raw'} "
                             f"variant; valid: {valid}, --db none")
    variant = Variant(spec, database, orm and database != "none")
    try:
        db_budget(spec, settings, database)
    except BudgetError as exc:
        raise SelectionError(str(exc)) from None
    # the requests the curl examples send: what the preflight checks the server for
    cases = [Case(variant, test) for test in (DB_TESTS if database != "none" else NO_DB_TESTS)]
    with Session(settings, cases, hosts=hosts, needs=FOR_SERVE) as session:
        try:
            endpoint = session.start_databases().get(database)
            for _, built in session.builds([spec], CACHE_DIR):
                if not built.ok:
                    return 1                      # the session said why
            with running_server(variant, session.launch, endpoint, log_path=None,
                                host=session.host("server")) as running:
                server = running.server
                print(f"\n{spec.id} ({variant.key}) is ready at {server.base_url}  "
                      f"[{settings.workers} workers, {server.pool_size} DB connection(s) per "
                      f"process]")
                if endpoint:
                    print(f"database: {endpoint.engine} at {endpoint.host}:{endpoint.port}, "
                          f"db {endpoint.name}, user {endpoint.user}")
                print("\ntry:\n  " + "\n  ".join(
                    curl_examples(server.base_url, settings.token, endpoint is not None,
                                  suite=spec.suite is not None)))
                print("\nCtrl-C stops the server and the databases.", flush=True)
                while server.alive():
                    time.sleep(0.5)
                print(f"{spec.id} exited with code {server.proc.returncode}")
                return 1
        except KeyboardInterrupt:
            print("\nstopping ...")
            return 0
        except ServerError as exc:
            print(f"error: {exc}")
            return 1
