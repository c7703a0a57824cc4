"""Command line of run_bench.py: run (default), list, serve, verify."""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from bench import config, load, manifest, provision, results
from bench.config import Settings

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
COMMANDS = ("run", "list", "serve", "verify", "build")


def _csv(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _add_selection(p: argparse.ArgumentParser) -> None:
    d = Settings()
    g = p.add_argument_group("selection")
    g.add_argument("--servers", type=_csv, default=[], metavar="A,B",
                   help="servers to run (default: all; see `list`)")
    g.add_argument("--databases", "--db", dest="databases", type=_csv, default=d.databases,
                   metavar="postgres,mysql", help="databases (default: %(default)s)")
    g.add_argument("--orm", choices=config.ORM_CHOICES, default=d.orm,
                   help="raw driver, ORM, or both variants (default: %(default)s)")
    g.add_argument("--tests", type=_csv, default=list(config.TESTS), metavar="T,T",
                   help="tests: get_user, update_user, plain, to_json (default: all)")
    g.add_argument("--servers-dir", action="append", type=Path, default=[],
                   help="an extra folder of server folders (e.g. test fixtures)")


def _add_server_settings(p: argparse.ArgumentParser) -> None:
    d = Settings()
    g = p.add_argument_group("servers")
    g.add_argument("--workers", type=int, default=d.workers,
                   help="worker processes (threads for single-process servers) per server "
                        "(default: %(default)s)")
    g.add_argument("--db-connections", type=int, default=d.db_connections,
                   help="total DB connections per server, split over its processes "
                        "(default: %(default)s)")
    g.add_argument("--port", type=int, default=d.port, help="server port (default: %(default)s)")
    g.add_argument("--token", default=d.token, help="API token (default: %(default)s)")


def _add_databases(p: argparse.ArgumentParser) -> None:
    import os
    d = Settings()
    g = p.add_argument_group("databases")
    g.add_argument("--db-mode", choices=("auto", "local", "docker", "external"), default=d.db_mode,
                   help="local: throwaway servers from installed binaries; docker: docker "
                        "compose; external: --postgres-dsn/--mysql-dsn; auto: docker if an "
                        "engine answers, else local (default: %(default)s)")
    g.add_argument("--pg-port", type=int, default=d.pg_port, help="default: %(default)s")
    g.add_argument("--mysql-port", type=int, default=d.mysql_port, help="default: %(default)s")
    g.add_argument("--postgres-dsn", default=os.environ.get("BENCH_POSTGRES_DSN"),
                   help="postgresql://user:pw@host:port/db (env BENCH_POSTGRES_DSN)")
    g.add_argument("--mysql-dsn", default=os.environ.get("BENCH_MYSQL_DSN"),
                   help="mysql://user:pw@host:port/db (env BENCH_MYSQL_DSN)")
    g.add_argument("--keep-db", action="store_true",
                   help="leave local/docker databases and their data behind (debugging)")


def parser() -> argparse.ArgumentParser:
    d = Settings()
    top = argparse.ArgumentParser(
        prog="run_bench.py",
        description="Benchmark web frameworks on real PostgreSQL and MySQL/MariaDB with wrk. "
                    "Without a command, `run` is assumed; `run_bench.py run --help` lists "
                    "its options.")
    sub = top.add_subparsers(dest="command")

    run = sub.add_parser("run", help="verify and measure the selected cases (default)")
    _add_selection(run)
    g = run.add_argument_group("load")
    g.add_argument("--duration", type=float, default=d.duration,
                   help="measured seconds per case (default: %(default)s)")
    g.add_argument("--warmup", type=float, default=d.warmup,
                   help="warm-up seconds before each measurement, not recorded in the "
                        "figures (default: %(default)s)")
    g.add_argument("--connections", type=int, default=d.connections,
                   help="wrk connections (default: %(default)s)")
    g.add_argument("--threads", type=int, default=d.threads,
                   help="wrk threads (default: half the CPUs, %(default)s)")
    g.add_argument("--timeout", type=float, default=d.timeout,
                   help="wrk request timeout, seconds (default: %(default)s)")
    g.add_argument("--seed", type=int, default=d.seed,
                   help="seed of the request generators (default: %(default)s)")
    g.add_argument("--error-threshold", type=float, default=d.error_threshold * 100,
                   metavar="PERCENT", help="a run with more errors than this is invalid "
                                           "(default: %(default)s %%)")
    g.add_argument("--no-verify", dest="verify", action="store_false",
                   help="skip verification before load (numbers are then unverified)")
    g.add_argument("--quick", action="store_true",
                   help="smoke run: 2 s measured, 1 s warm-up")
    g.add_argument("--results-dir", type=Path, default=d.results_dir,
                   help="where run folders go (default: results/)")
    _add_server_settings(run)
    _add_databases(run)

    sub.add_parser("list", help="show the servers, their variants and the tests")
    build = sub.add_parser("build", help="run the build step of the selected servers' manifests")
    build.add_argument("--servers", type=_csv, default=[], metavar="A,B")
    build.add_argument("--servers-dir", action="append", type=Path, default=[])

    serve = sub.add_parser("serve", help="start one server against a restored database, in "
                                         "the foreground, for debugging by hand")
    serve.add_argument("server")
    serve.add_argument("--db", dest="database", default="postgres",
                       help="postgres, mysql or none (default: %(default)s)")
    serve.add_argument("--orm", action="store_true", help="the ORM variant")
    serve.add_argument("--servers-dir", action="append", type=Path, default=[])
    _add_server_settings(serve)
    _add_databases(serve)

    ver = sub.add_parser("verify", help="verify the selected servers against the contract, "
                                        "without load")
    _add_selection(ver)
    _add_server_settings(ver)
    _add_databases(ver)
    ver.add_argument("--results-dir", type=Path, default=d.results_dir)
    return top


def settings_from(args: argparse.Namespace) -> Settings:
    s = Settings()
    for name in vars(s):
        if hasattr(args, name) and name not in ("tests", "servers_dirs", "error_threshold"):
            setattr(s, name, getattr(args, name))
    if not isinstance(s.orm, str):        # `serve --orm` is a flag, not a selection
        s.orm = "orm" if s.orm else "raw"
    if hasattr(args, "tests"):
        s.tests = [config.normalise_test(t) for t in args.tests]
    if getattr(args, "error_threshold", None) is not None:
        s.error_threshold = args.error_threshold / 100
    s.servers_dirs = [manifest.SERVERS_DIR, *getattr(args, "servers_dir", [])]
    if getattr(args, "quick", False):
        s.duration, s.warmup = 2.0, 1.0
    return s


def cmd_list(specs: dict) -> int:
    from tabulate import tabulate
    rows = [[s.id, s.language, ", ".join(s.databases),
             ", ".join("orm" if o else "raw" for o in s.orm), s.concurrency, s.description]
            for s in specs.values()]
    print(tabulate(rows, ["server", "language", "databases", "variants", "concurrency",
                          "description"], tablefmt="simple"))
    print(f"\ntests: {', '.join(config.TESTS)} (plain and to json run once per server, "
          f"without a database)")
    return 0


def cmd_build(settings: Settings, specs: dict) -> int:
    from bench import lifecycle
    config.validate(settings, specs)
    for server_id in settings.servers or sorted(specs):
        spec = specs[server_id]
        if spec.build:
            log = lifecycle.CACHE_DIR / f"build-{spec.id}.log"
            log.parent.mkdir(parents=True, exist_ok=True)
            print(f"building {spec.id} (log: {log})", flush=True)
            try:
                seconds = lifecycle.build(spec, settings, log)
            except lifecycle.ServerError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            print(f"built {spec.id} in {seconds:.1f} s")
    return 0


def cmd_run(settings: Settings, specs: dict) -> int:
    from bench.runner import Run
    cases = config.plan(settings, specs)
    if not cases:
        print("nothing to run: the selection matches no case", file=sys.stderr)
        return EXIT_USAGE
    load.require_wrk()
    doc = Run(settings, cases).execute()
    if doc["status"] == "interrupted":
        return EXIT_INTERRUPTED
    bad = [c for c in doc["cases"] if c["status"] != results.OK]
    if doc["status"] != "complete" or bad:
        print(f"{len(bad)} of {len(doc['cases'])} cases are not ok (see the tables)",
              file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C must always stop a run cleanly, even when started from a shell that made
    # its background jobs ignore SIGINT (Python would then keep ignoring it)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help")):
        argv.insert(0, "run")
    args = parser().parse_args(argv)
    try:
        settings = settings_from(args)
        specs = manifest.discover(settings.servers_dirs)
        if args.command == "list":
            return cmd_list(specs)
        if args.command == "build":
            return cmd_build(settings, specs)
        if args.command == "serve":
            from bench.serve import serve
            return serve(settings, specs, args.server, args.database, args.orm)
        if args.command == "verify":
            from bench.verify_run import verify_selection
            return verify_selection(settings, specs)
        return cmd_run(settings, specs)
    except (config.SelectionError, manifest.ManifestError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (load.LoadError, provision.ProvisionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
