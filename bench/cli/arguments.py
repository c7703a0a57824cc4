"""The command line's options, and how they become `Settings`: preset first, then every
flag given explicitly on top of it."""
from __future__ import annotations

import argparse
import os
from dataclasses import fields, replace
from pathlib import Path

from bench.core.counting import COUNTERS, DEFAULT_REQUESTS
from bench.core.settings import ALL_TESTS, ORM_CHOICES, PRESETS, RUNTIME_THREADS, \
    SelectionError, Settings, normalise_test
from bench.core.suite import DEFAULT_N
from bench.paths import SERVERS_DIR


def csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def preset_help() -> str:
    lines = [f"{p.name}: {p.repeat} x {p.duration:g} s samples after {p.warmup:g} s warm-up, "
             f"{p.connections} connections ({p.purpose})" for p in PRESETS.values()]
    return "; ".join(lines)


def add_selection(p: argparse.ArgumentParser) -> None:
    d = Settings()
    g = p.add_argument_group("selection")
    g.add_argument("--servers", type=csv_list, default=[], metavar="A,B",
                   help="servers to run (default: all; see `list`)")
    g.add_argument("--databases", "--db", dest="databases", type=csv_list, default=d.databases,
                   metavar="postgres,mysql", help="databases (default: %(default)s)")
    g.add_argument("--orm", choices=ORM_CHOICES, default=d.orm,
                   help="raw driver, ORM, or both variants; raw-else-orm: the raw variant, "
                        "the ORM one for a server without raw (default: %(default)s)")
    g.add_argument("--tests", type=csv_list, default=None, metavar="T,T",
                   help="tests: get_user, update_user, plain, to_json (the default four), "
                        "and the database suite's queries, updates, fortunes, cached; `all` "
                        "is all eight (the suite preset's choice); `mixed`: each request's "
                        "endpoint drawn by the weights of --mix; `pipelined`: plain, "
                        "--pipeline requests written at once (`run_bench.py list` names "
                        "them all)")
    g.add_argument("--mix", default=None, metavar="FILE",
                   help="the mixed test's profile: weighted endpoints in a TOML file "
                        "(default: mixes/small-api.toml: 60%% get user, 15%% update user, "
                        "10%% queries n=5, 10%% fortunes, 5%% to json)")
    g.add_argument("--n", dest="n_levels", type=int_list, default=None, metavar="N[,N...]",
                   help="rows per request of queries, updates and cached, 1 to 500; several "
                        "(e.g. 1,20) measure each level as a case of its own (default: "
                        + ", ".join(f"{t} {n}" for t, n in DEFAULT_N.items()) + ")")
    g.add_argument("--server-env", action="append", default=[], metavar="NAME=V[,V...]",
                   help="a settings sweep: each framework measured once per value of this "
                        "environment variable (e.g. GOMAXPROCS=2,8), in the same rounds, "
                        "its rows labelled id@NAME=V; repeat the flag for combinations")
    g.add_argument("--dep", dest="deps", action="append", default=[],
                   metavar="NAME=V[,V...]",
                   help="a release sweep: each framework that declares this dependency (its "
                        "requirements.txt or go.mod) measured once per listed version of it, "
                        "each in an environment of its own, in the same rounds, its rows "
                        "labelled id@NAME=V (e.g. sanic=23.6.0,25.12.1, "
                        "github.com/gin-gonic/gin=v1.11.0,v1.12.0)")
    g.add_argument("--servers-dir", action="append", type=Path, default=[],
                   help="an extra folder of server folders (e.g. test fixtures)")


def add_server_settings(p: argparse.ArgumentParser) -> None:
    d = Settings()
    g = p.add_argument_group("servers")
    g.add_argument("--workers", type=int, default=d.workers,
                   help="W: worker processes per server; threads for a runtime that "
                        "schedules its own work on threads, see --runtime-threads "
                        "(default: %(default)s)")
    g.add_argument("--runtime-threads", choices=RUNTIME_THREADS, default=d.runtime_threads,
                   help="threads of a runtime that schedules its own work (Go, tokio, "
                        "actix): as many as the server's usable CPUs, at most W (cpus), or "
                        "W (workers) (default: %(default)s)")
    g.add_argument("--db-connections", type=int, default=d.db_connections,
                   help="total DB connections per server, split over its processes "
                        "(default: %(default)s)")
    g.add_argument("--port", type=int, default=d.port, help="server port (default: %(default)s)")
    g.add_argument("--token", default=d.token, help="API token (default: %(default)s)")


def add_instructions(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("instructions per request (docs/instructions.md)")
    g.add_argument("--instructions", action="store_true", default=None,
                   help="also count each case's instructions and system calls per request: "
                        "its server started under a counter (the CPU's own where the "
                        "machine has them, else valgrind's callgrind), a warm-up, then a "
                        "fixed, seeded sequence of N of its requests; figures the "
                        "machine's noise does not move, judged by ab, compare and history")
    g.add_argument("--instructions-requests", type=int, default=None, metavar="N",
                   help=f"requests counted per case (default: {DEFAULT_REQUESTS})")
    g.add_argument("--instructions-runs", type=int, default=None, metavar="R",
                   help="counts of each case, each a fresh start of its server (default: 1; "
                        "ab: 2 per version, in the order A B B A)")
    g.add_argument("--counter", choices=COUNTERS, default=None,
                   help="the instruction counter: perf (the CPU's counters, at full speed, "
                        "where the machine has them), callgrind (valgrind: anywhere, with "
                        "each function's share), auto: the first of them found (default)")


def add_cold_build(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cold-build", action="store_true", default=None,
                   help="build each server first from nothing cached, as a fresh machine "
                        "would (a copy of servers/, an empty cache, the toolchains' caches "
                        "empty: downloads included), and record its seconds beside the "
                        "warm build's (bench/infra/cold.py); on this machine only")


def add_databases(p: argparse.ArgumentParser) -> None:
    d = Settings()
    g = p.add_argument_group("databases")
    g.add_argument("--db-mode", choices=("auto", "local", "docker", "external"), default=d.db_mode,
                   help="local: throwaway servers from installed binaries; docker: docker "
                        "compose; external: --postgres-dsn/--mysql-dsn; auto: local where "
                        "the database binaries are installed, else docker if an engine "
                        "answers (default: %(default)s)")
    g.add_argument("--db-images", choices=("auto", "official", "local"),
                   default=os.environ.get("BENCH_DB_IMAGES", d.db_images),
                   help="docker mode's images: official (postgres:15, mysql:8.4 from the "
                        "registry), local (built here from the OS's packages: PostgreSQL 15 "
                        "and MariaDB), auto: official where a registry gives them, else "
                        "local (env BENCH_DB_IMAGES; default: %(default)s)")
    g.add_argument("--pg-port", type=int, default=d.pg_port, help="default: %(default)s")
    g.add_argument("--mysql-port", type=int, default=d.mysql_port, help="default: %(default)s")
    g.add_argument("--postgres-dsn", default=os.environ.get("BENCH_POSTGRES_DSN"),
                   help="postgresql://user:pw@host:port/db (env BENCH_POSTGRES_DSN)")
    g.add_argument("--mysql-dsn", default=os.environ.get("BENCH_MYSQL_DSN"),
                   help="mysql://user:pw@host:port/db (env BENCH_MYSQL_DSN)")
    g.add_argument("--keep-db", action="store_true",
                   help="leave local/docker databases and their data behind (debugging)")


def add_hosts(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("machines")
    g.add_argument("--hosts", type=Path, default=None, metavar="FILE",
                   help="run the load generator, the servers and the databases on other "
                        "machines over SSH (README, \"Several machines\")")
    g.add_argument("--ssh-config", type=Path, default=None, metavar="FILE",
                   help="an OpenSSH client configuration for --hosts (default: ~/.ssh/config)")


def hosts_from(args: argparse.Namespace):
    """The roles' hosts (all local without --hosts); HostsError is bad input."""
    from bench.infra.hosts import Hosts, HostsError, load_hosts
    path, ssh_config = getattr(args, "hosts", None), getattr(args, "ssh_config", None)
    if path is None:
        return Hosts()
    try:
        return load_hosts(path, **({"config": [str(ssh_config)]} if ssh_config else {}))
    except HostsError as exc:
        raise SelectionError(str(exc)) from None


def add_load(p: argparse.ArgumentParser) -> None:
    d = Settings()
    g = p.add_argument_group("load and samples (a preset sets duration, warm-up, repeat and "
                             "connections together; a flag given explicitly overrides it)")
    g.add_argument("--preset", choices=list(PRESETS), default=None,
                   help=f"default: default. {preset_help()}")
    g.add_argument("--quick", action="store_const", dest="preset", const="quick",
                   help="the same as --preset quick")
    g.add_argument("--duration", type=float, default=None,
                   help="measured seconds per sample")
    g.add_argument("--warmup", type=float, default=None,
                   help="warm-up seconds before each sample, not recorded in the figures")
    g.add_argument("--burst", type=float, default=None, metavar="S",
                   help="after each measured window, S seconds of new connections "
                        "(Connection: close), checked for errors and crashed workers "
                        "(the stress preset: 5)")
    g.add_argument("--repeat", type=int, default=None,
                   help="samples per case, measured in interleaved rounds of every case in a "
                        "shuffled order")
    g.add_argument("--connections", type=int_list, default=None, metavar="N[,N...]",
                   help="client connections; several (e.g. 16,64,256) measure each level as "
                        "a case of its own: a concurrency sweep")
    g.add_argument("--threads", type=int, default=None,
                   help="wrk threads (default: half the usable CPUs, at most the connections, "
                        "and dividing them evenly)")
    g.add_argument("--timeout", type=float, default=d.timeout,
                   help="wrk request timeout, seconds (default: %(default)s)")
    g.add_argument("--seed", type=int, default=d.seed,
                   help="seed of the request generators (default: %(default)s)")
    g.add_argument("--order-seed", type=int, default=None,
                   help="seed of the sample order (default: drawn at random and recorded)")
    g.add_argument("--error-threshold", type=float, default=d.error_threshold * 100,
                   metavar="PERCENT", help="a sample with more errors (per request sent) than "
                                           "this is invalid (default: %(default)s %%)")
    g.add_argument("--unstable-cv", type=float, default=d.unstable_cv * 100, metavar="PERCENT",
                   help="a case whose req/s varies more than this between samples (coefficient "
                        "of variation) is flagged unstable (default: %(default)s %%)")
    g.add_argument("--foreign-cpu-limit", type=float, default=d.foreign_cpu_limit * 100,
                   metavar="PERCENT", help="a sample during which other processes used more "
                                           "of the machine's CPU than this is marked "
                                           "(default: %(default)s %%)")
    g.add_argument("--strict", action="store_true", default=None,
                   help="a sample above --foreign-cpu-limit is invalid instead of marked")
    g.add_argument("--no-verify", dest="verify", action="store_false",
                   help="skip verification before load (numbers are then unverified)")
    g.add_argument("--quiet", "-q", dest="display", action="store_const", const="quiet",
                   default="auto", help="print only errors and the final tables (default: a "
                                        "live display on a terminal, one line per event "
                                        "otherwise)")
    g.add_argument("--resume", metavar="RUN", default=None,
                   help="continue an interrupted run (its folder, results.json or run id) "
                        "with its stored settings, measuring only the samples it did not "
                        "finish; refused if the code or the machine changed")
    g.add_argument("--rerun-failed", metavar="RUN", default=None,
                   help="measure the failed, invalid and unverified cases of a finished run "
                        "again, into the same document (the old samples are kept as history)")
    g.add_argument("--results-dir", type=Path, default=d.results_dir,
                   help="where run folders go (default: results/)")


def add_modes(p: argparse.ArgumentParser) -> None:
    d = Settings()
    g = p.add_argument_group("measurement modes (README, \"Modes\")")
    g.add_argument("--connection-mode", dest="connection_modes", type=csv_list, default=None,
                   metavar="keep-alive,close",
                   help="keep-alive (default): each client connection stays open; close: "
                        "`Connection: close` on every request, a new TCP connection each")
    g.add_argument("--connection-close", dest="connection_modes", action="store_const",
                   const=["close"], help="the same as --connection-mode close")
    g.add_argument("--behind", type=csv_list, default=None, metavar="none,PROXY",
                   help="put a reverse proxy (a folder under proxies/, e.g. nginx) in front "
                        "of every server; `none,nginx` measures both (default: none)")
    g.add_argument("--protocol", dest="protocols", type=csv_list, default=None,
                   metavar="h1,h1-tls,h2,h2c",
                   help="what the clients speak, a case each: h1 (HTTP/1.1, the default), "
                        "h1-tls (over TLS 1.3, wrk), h2 (HTTP/2 over TLS, ALPN, h2load), h2c "
                        "(HTTP/2 with prior knowledge, h2load); a server that does not speak "
                        "one natively is measured through --tls-proxy (docs/protocols.md)")
    g.add_argument("--streams", type=int_list, default=None, metavar="M[,M...]",
                   help="with --protocol h2/h2c: concurrent streams per connection "
                        "(h2load's -m), a case each (default: 1)")
    add_pipeline(g)
    g.add_argument("--tls-proxy", default=None, metavar="PROXY",
                   help="the proxy (proxies/<name>/, its proxy.toml's protocols) that "
                        "terminates TLS and HTTP/2 in front of a server that does not "
                        "speak them (default: nginx)")
    g.add_argument("--no-ceiling", dest="ceiling", action="store_false", default=None,
                   help="leave out the reference servers (the ceiling row of the plain and "
                        "to json tables)")
    for side, what in (("server", "every server process (and a proxy in front)"),
                       ("client", "the load generator"), ("db", "the database servers")):
        g.add_argument(f"--{side}-cpus", default=None, metavar="LIST",
                       help=f"pin {what} to these CPUs (a Linux CPU list such as 0-3,8)")
    g.add_argument("--server-memory", default=None, metavar="SIZE",
                   help="cap every server's memory (its whole process tree) at SIZE, e.g. "
                        "512M or 2G (binary units): a cgroup's memory.max, or v1's "
                        "memory.limit_in_bytes; a server the kernel kills for it fails "
                        "that sample, and the run goes on")
    g.add_argument("--proxy-memory", default=None, metavar="SIZE",
                   help="cap the --behind proxy's memory (its whole process tree) at SIZE, "
                        "as --server-memory caps the server's; an OOM kill in it makes the "
                        "sample invalid or failed, with the reason")
    g.add_argument("--rate", dest="rates", type=csv_list, default=None, metavar="R[,R...]",
                   help="latency at fixed request rates (open model, oha): shares of each "
                        "case's measured maximum (25%%,50%%,90%%) or absolute req/s")
    g.add_argument("--generator", dest="generators", type=csv_list, default=None,
                   metavar="wrk,oha,k6",
                   help="the load generators: each measures the models it runs (wrk the "
                        "closed loop, oha and k6 both: the closed loop and the open model "
                        "of --rate), a case each; "
                        "a model none of them runs gets its default, wrk or oha "
                        "(default: wrk; README, \"Which generator when\")")
    g.add_argument("--iterations", type=int, default=None, metavar="N",
                   help="with --generator k6: each measured sample sends N requests shared "
                        "among the connections, as `k6 run --vus V --iterations N` (k6's "
                        "shared-iterations), with --duration as its cap (default: a window "
                        "of --duration)")
    g.add_argument("--knee-p99", dest="knee_p99_ms", type=float, default=d.knee_p99_ms,
                   metavar="MS", help="the knee of a latency-vs-rate curve is the highest "
                                      "rate whose p99 stays under this (default: %(default)s ms)")


def add_pipeline(p) -> None:
    """The HTTP workloads' own settings (bench.core.pipelining, bench.core.workloads)."""
    p.add_argument("--pipeline", type=int, default=None, metavar="D",
                   help="the pipelined test: HTTP/1.1 requests each connection writes at "
                        "once, the next batch when all are answered (wrk; default: 16, as "
                        "TechEmpower's plaintext); verification sends one such batch")
    p.add_argument("--compression", type=csv_list, default=None, metavar="gzip,br",
                   help="to json and static also asked for with this Accept-Encoding, a case "
                        "each beside the uncompressed one, from a server started with its "
                        "compression on (BENCH_COMPRESSION=1)")
    p.add_argument("--size", dest="sizes", type=csv_list, default=None, metavar="1k,64k,1m",
                   help="the static test's files and the upload test's bodies, a case each "
                        "(default: static 1k,64k,1m; upload 64k,1m)")


def int_list(value: str) -> list[int]:
    try:
        return [int(v) for v in csv_list(value)]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number or a comma-separated "
                                         f"list of numbers") from None


def expand_tests(names: list[str]) -> list[str]:
    """Test names as given (get_user, update-user, ...), with `all` for all eight."""
    tests = [normalise_test(t) for t in names]
    return list(ALL_TESTS) if tests == ["all"] else tests


def settings_from(args: argparse.Namespace) -> Settings:
    """The preset (for a command with load flags), then every flag given on top of it."""
    base = Settings()
    if getattr(args, "preset", None) or hasattr(args, "duration"):
        base = base.with_preset(getattr(args, "preset", None) or "default")
    given = {f.name: getattr(args, f.name) for f in fields(Settings)
             if getattr(args, f.name, None) is not None
             and f.name not in ("tests", "servers_dirs", "error_threshold", "unstable_cv",
                                "foreign_cpu_limit",
                                "preset", "connections")}
    levels = getattr(args, "connections", None)
    if levels:
        given.update(connections=levels[0], connection_levels=levels if len(levels) > 1 else None)
    if not isinstance(given.get("orm", base.orm), str):   # `serve --orm` is a flag, not a selection
        given["orm"] = "orm" if given["orm"] else "raw"
    if getattr(args, "tests", None):
        given["tests"] = expand_tests(args.tests)
    if getattr(args, "error_threshold", None) is not None:
        given["error_threshold"] = args.error_threshold / 100
    if getattr(args, "foreign_cpu_limit", None) is not None:
        given["foreign_cpu_limit"] = args.foreign_cpu_limit / 100
    if getattr(args, "unstable_cv", None) is not None:
        given["unstable_cv"] = args.unstable_cv / 100
    given["servers_dirs"] = [SERVERS_DIR, *getattr(args, "servers_dir", [])]
    return replace(base, **given)
