"""`run_bench.py serve`: one server, in the foreground, set up exactly as a benchmark case
would set it up, with ready-to-paste curl commands. Ctrl-C stops it all.

`--protocol` (bench.core.protocols) is the case's protocol as a run meets it
(bench.core.plan.server_point): a server whose manifest lists it is started with its own
listener for it (bench.infra.native) and HTTP/1.1 on the port after; one that does not is
served through the terminating proxy (`--tls-proxy`, nginx by default). Over TLS, the
certificates are made for this serve as for a run (bench.infra.certs), in a temporary
folder removed when it stops; the curl commands trust its CA."""
from __future__ import annotations

import shlex
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from bench.core import protocols
from bench.core.manifest import BudgetError, ServerSpec
from bench.core.proxyspec import ProxySpec
from bench.core.plan import Case, LoadParams, Variant, check_available, server_point
from bench.core.settings import DB_TESTS, NO_DB_TESTS, NO_PROXY, SelectionError, Settings
from bench.infra import certs
from bench.infra.lifecycle import running_server
from bench.infra.server import ServerError, db_budget
from bench.paths import CACHE_DIR
from bench.session import FOR_SERVE, Session, proxies_unavailable, servers_unavailable

# how curl speaks each protocol; {ca}: the run's CA, which the TLS ones verify against
CURL = {"h1": "curl -s", "h1-tls": "curl -s --http1.1 --cacert {ca}",
        "h2": "curl -s --http2 --cacert {ca}", "h2c": "curl -s --http2-prior-knowledge"}


def curl_command(protocol: str, ca: Path | str | None = None) -> str:
    """curl with the flags that make it speak `protocol` (and nothing else)."""
    if protocol not in CURL:
        raise ValueError(f"unknown protocol {protocol!r}; valid: {', '.join(CURL)}")
    if protocol in protocols.TLS and ca is None:
        raise ValueError(f"curl over {protocol} needs the run's CA")
    return CURL[protocol].format(ca=shlex.quote(str(ca)))


def load_example(base: str, token: str, with_db: bool, protocol: str = protocols.DEFAULT) -> str:
    """A short load on the server over `protocol`: wrk for HTTP/1.1 (over TLS too), h2load
    for HTTP/2 (the generators a run uses, bench.core.protocols.generator_for)."""
    header = f"-H {shlex.quote('token: ' + token)}"
    target = f"{base}/user/1/" if with_db else f"'{base}/plain/?param1=a'"
    if protocols.generator_for(protocol, "wrk") == protocols.HTTP2_GENERATOR:
        return f"h2load -c16 -m4 -D 5s {header} {target}"
    return f"wrk -t1 -c16 -d5s {header} {target}"


def curl_examples(base: str, token: str, with_db: bool, suite: bool = False,
                  protocol: str = protocols.DEFAULT, ca: Path | str | None = None) -> list[str]:
    """The requests to paste, over `protocol` (`ca`: the run's CA, over TLS). Besides
    HTTP/1.1 the first one shows the response's status line, which names the protocol."""
    curl = curl_command(protocol, ca)
    t = f"-H {shlex.quote('token: ' + token)}"
    lines = [f"{curl} {base}/ping/" if protocol == protocols.DEFAULT else
             f"{curl} -i {base}/ping/"]
    if with_db:
        lines += [f"{curl} {t} {base}/user/42/",
                  f"{curl} {t} -X PATCH -H 'Content-Type: application/json' "
                  f"-d '{{\"username\": \"alice\", \"email\": \"alice@example.com\"}}' {base}/user/42/",
                  f"{curl} -i {base}/user/42/            # no token: 401"]
    if with_db and suite:
        lines += [f"{curl} {t} '{base}/queries/?n=5'", f"{curl} {t} '{base}/updates/?n=5'",
                  f"{curl} {t} {base}/fortunes/", f"{curl} {t} '{base}/cached/?n=5'"]
    lines += [f"{curl} {t} '{base}/plain/?param1=a&param2=b&param3=c'",
              f"{curl} {t} '{base}/to_json/?param1=a&param2=b&param3=c'"]
    if not with_db:            # the HTTP workloads (servers/README.md), on the no-DB variant
        lines += [f"{curl} -i -H 'Range: bytes=100-199' {base}/static/64k.txt      # no token",
                  f"head -c 65536 /dev/urandom | {curl} {t} -H 'Content-Type: "
                  f"application/octet-stream' --data-binary @- {base}/upload/",
                  f"{curl} {t} {base}/delay/"]
        if protocol in (protocols.DEFAULT, "h1-tls"):      # WebSocket over HTTP/1.1 only
            ca_arg = f" --ca {shlex.quote(str(ca))}" if ca else ""
            lines.append(f".venv/bin/python -m bench.verify.websocket "
                         f"{base.replace('http', 'ws', 1)}/ws/ {shlex.quote(token)}{ca_arg}"
                         f"      # the websocket checks")
    return lines + [load_example(base, token, with_db, protocol)]


def protocol_point(settings: Settings, spec: ServerSpec, protocol: str,
                   hosts=None) -> tuple[LoadParams, ProxySpec | None]:
    """(the load point a run measures `spec` at over `protocol`, the ProxySpec that
    terminates it in front of the server or None): the server's own listener where its
    manifest lists the protocol, else --tls-proxy. Bad input is a SelectionError, before
    anything starts, as a run's."""
    from bench.infra.proxy import available_proxies
    found = available_proxies() if protocol != protocols.DEFAULT else {}
    wrong = protocols.problems([protocol], [], [], [NO_PROXY],
                               {name: p.protocols for name, p in found.items()},
                               settings.tls_proxy, [1])
    if wrong:
        raise SelectionError(wrong[0])
    point = server_point(spec, LoadParams(settings.connections, protocol=protocol,
                                          generator=protocols.generator_for(protocol, "wrk")),
                         settings.tls_proxy)
    if point.proxy == NO_PROXY:
        return point, None
    check_available([point.proxy], proxies_unavailable(found, hosts))
    return point, found[point.proxy]


def where_spoken(spec: ServerSpec, protocol: str, proxy) -> str:
    """Which listener answers `protocol`, for the banner."""
    if protocol == protocols.DEFAULT:
        return ""
    if proxy is None:
        return f" ({protocol} on {spec.id}'s own listener: its manifest lists it)"
    return (f" ({protocol} through the {proxy.name} proxy, --tls-proxy: {spec.id} does not "
            f"speak {protocol} itself)")


def serve(settings: Settings, specs: dict[str, ServerSpec], server_id: str, database: str,
          orm: bool, hosts=None, protocol: str = protocols.DEFAULT,
          compression: bool = False) -> int:
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
    point, proxy = protocol_point(settings, spec, protocol, hosts)
    # the requests the curl examples send, over the protocol as a run sends them: what
    # the preflight checks the server (and the proxy in front) for
    cases = [Case(variant, test, point)
             for test in (DB_TESTS if database != "none" else NO_DB_TESTS)]
    with Session(settings, cases, hosts=hosts, needs=FOR_SERVE) as session, \
            ExitStack() as temporary:
        try:
            endpoint = session.start_databases().get(database)
            for _, built in session.builds([spec, *([proxy] if proxy else [])], CACHE_DIR):
                if not built.ok:
                    return 1                      # the session said why
            tls = None
            if protocol in protocols.TLS:
                folder = temporary.enter_context(tempfile.TemporaryDirectory(
                    prefix="webbench-serve-"))
                tls = certs.for_clients(Path(folder) / "tls", settings.host,
                                        session.launch.host)
            with running_server(variant, session.launch, endpoint, log_path=None,
                                host=session.host("server"), proxy=proxy,
                                protocol=protocol, tls=tls,
                                compression=compression) as running:
                server = running.server
                print(f"\n{spec.id} ({variant.key}) is ready at {running.base_url}"
                      f"{where_spoken(spec, protocol, proxy)}  [{settings.workers} workers, "
                      f"{server.pool_size} DB connection(s) per process]")
                if running.base_url != server.base_url:
                    print(f"the server itself, over HTTP/1.1: {server.base_url}")
                if tls is not None:
                    print(f"the run's CA (what the clients trust): {tls.ca}")
                if endpoint:
                    print(f"database: {endpoint.engine} at {endpoint.host}:{endpoint.port}, "
                          f"db {endpoint.name}, user {endpoint.user}")
                print("\ntry:\n  " + "\n  ".join(
                    curl_examples(running.base_url, settings.token, endpoint is not None,
                                  suite=spec.suite is not None, protocol=protocol,
                                  ca=tls.ca if tls is not None else None)))
                stopping = "the proxy, the server" if proxy else "the server"
                print(f"\nCtrl-C stops {stopping} and the databases.", flush=True)
                return watch(running)
        except KeyboardInterrupt:
            print("\nstopping ...")
            return 0
        except ServerError as exc:
            print(f"error: {exc}")
            return 1


def watch(running) -> int:
    """Until the server (or the proxy in front) exits by itself: 1, saying which."""
    server, proxy = running.server, running.proxy
    while server.alive() and (proxy is None or proxy.proc.poll() is None):
        time.sleep(0.5)
    if not server.alive():
        print(f"{server.spec.id} exited with code {server.proc.returncode}")
    else:
        print(f"the {proxy.spec.name} proxy exited with code {proxy.proc.returncode}")
    return 1
