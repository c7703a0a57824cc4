"""Command line of run_bench.py: run (default), list, build, serve, verify, compare,
calibrate, report, history, doctor, ab.

Each command is a thin function over the packages below it; exit statuses: 0 all well,
1 something measured or checked is not ok (or a tool/database failed), 2 bad input
(unknown names, impossible settings), 130 interrupted; compare: 3 a case broke (the
README's "Exit statuses" table).
"""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from bench import session
from bench.cli import ab, arguments, compare, envs, images, report
from bench.core import manifest
from bench.core.protocols import DEFAULT as DEFAULT_PROTOCOL, PROTOCOLS
from bench.core.settings import ALL_TESTS, TESTS, SelectionError, Settings, validate
from bench.infra import databases
from bench.load import wrk
from bench.setup import toolchains
from bench.storage import results

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
COMMANDS = ("run", "list", "serve", "verify", "build", "compare", "calibrate", "report",
            "history", "doctor", "ab", "envs", "images")


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="run_bench.py",
        description="Benchmark web frameworks on real PostgreSQL and MySQL/MariaDB with wrk. "
                    "Without a command, `run` is assumed; `run_bench.py run --help` lists "
                    "its options.")
    sub = top.add_subparsers(dest="command")

    run = sub.add_parser("run", help="verify and measure the selected cases (default)")
    arguments.add_selection(run)
    arguments.add_load(run)
    arguments.add_modes(run)
    arguments.add_server_settings(run)
    arguments.add_cold_build(run)
    arguments.add_instructions(run)
    arguments.add_databases(run)
    arguments.add_hosts(run)

    sub.add_parser("list", help="show the servers, their variants, whether this machine can "
                                "run them, and the tests")
    sub.add_parser("doctor", add_help=False,
                   help="what this machine has of the tools and toolchains the project "
                        "needs (versions, minimums, OK / missing / too old), which servers "
                        "are available, and what `make setup` would install; installs "
                        "nothing (`run_bench.py doctor --help`)")
    build = sub.add_parser("build", help="run the build step of the selected servers' manifests "
                                         "and of the reverse proxies built from source")
    build.add_argument("--servers", type=arguments.csv_list, default=[], metavar="A,B")
    build.add_argument("--behind", type=arguments.csv_list, default=None, metavar="PROXY,...",
                       help="the proxies (folders under proxies/) to build too; default: every "
                            "one with a build step (e.g. traefik), none when --servers is given")
    build.add_argument("--servers-dir", action="append", type=Path, default=[])
    arguments.add_cold_build(build)
    arguments.add_hosts(build)

    serve = sub.add_parser("serve", help="start one server against a restored database, in "
                                         "the foreground, for debugging by hand")
    serve.add_argument("server")
    serve.add_argument("--db", dest="database", default="postgres",
                       help="postgres, mysql or none (default: %(default)s)")
    serve.add_argument("--orm", action="store_true", help="the ORM variant")
    serve.add_argument("--protocol", default=DEFAULT_PROTOCOL, metavar="|".join(PROTOCOLS),
                       help="what the curl commands speak: the server's own listener for it "
                            "where its manifest lists the protocol, else through --tls-proxy, "
                            "as a run's case (default: %(default)s; docs/protocols.md)")
    serve.add_argument("--tls-proxy", default=None, metavar="PROXY",
                       help="the proxy that terminates --protocol for a server that does not "
                            "speak it itself (default: nginx)")
    # dest not `compression`: Settings has a field of that name (--compression's encodings)
    serve.add_argument("--compression", dest="serve_compressed", action="store_true",
                       help="start it with its response compression on (BENCH_COMPRESSION=1, "
                            "as a --compression case runs it)")
    serve.add_argument("--servers-dir", action="append", type=Path, default=[])
    arguments.add_server_settings(serve)
    arguments.add_databases(serve)
    arguments.add_hosts(serve)

    ver = sub.add_parser("verify", help="verify the selected servers against the contract, "
                                        "without load")
    arguments.add_selection(ver)
    arguments.add_server_settings(ver)
    arguments.add_databases(ver)
    arguments.add_hosts(ver)
    ver.add_argument("--results-dir", type=Path, default=Settings().results_dir)
    ver.add_argument("--behind", type=arguments.csv_list, default=None, metavar="PROXY,...",
                     help="check HTTP conformance through these reverse proxies too (folders "
                          "under proxies/, e.g. nginx), as a run's --behind puts them in front")
    ver.add_argument("--protocol", dest="protocols", type=arguments.csv_list, default=None,
                     metavar="h1,h1-tls,h2,h2c",
                     help="check the contract's answers over these protocols too, on the "
                          "server's own listener where its manifest lists the protocol, else "
                          "through --tls-proxy, with the negotiated protocol, TLS version "
                          "and cipher (docs/protocols.md)")
    ver.add_argument("--tls-proxy", default=None, metavar="PROXY",
                     help="the proxy that terminates TLS and HTTP/2 for a server that does "
                          "not speak them itself (default: nginx)")
    arguments.add_pipeline(ver)

    compare.add_parser(sub)
    cal = sub.add_parser("calibrate", help="run the selection twice (A/A) and store per-case "
                                           "regression thresholds for this machine")
    arguments.add_selection(cal)
    arguments.add_load(cal)
    arguments.add_modes(cal)           # the run's options, so nightly.sh can pass the same
    arguments.add_instructions(cal)
    arguments.add_server_settings(cal)
    arguments.add_databases(cal)
    arguments.add_hosts(cal)
    report.add_parsers(sub, Settings().results_dir)
    ab.add_parser(sub)
    envs.add_parser(sub)
    images.add_parser(sub)
    return top


def cmd_list(specs: dict) -> int:
    from tabulate import tabulate
    unavailable = toolchains.unavailable(specs)
    rows = [[s.id, s.language, ", ".join(s.databases),
             ", ".join("orm" if o else "raw" for o in s.orm),
             "yes" if s.suite else "no" if s.databases else "", s.concurrency,
             f"no: {unavailable[s.id]}" if s.id in unavailable else "yes", s.description]
            for s in specs.values()]
    print(tabulate(rows, ["server", "language", "databases", "variants", "suite",
                          "concurrency", "available", "description"], tablefmt="simple",
                   maxcolwidths=[None, None, None, None, None, None, 60, 60]))
    left = [[s.id, test, why] for s in specs.values() for test, why in s.unsupported.items()]
    if left:          # the manifests' [unsupported]: shown as such in the tables too
        print()
        print(tabulate(left, ["server", "not supported", "why"], tablefmt="simple",
                       maxcolwidths=[None, None, 90]))
    from bench.infra.proxy import available_proxies
    proxies = available_proxies()
    not_here = toolchains.unavailable(proxies)
    print()
    print(tabulate([[p.name, "built here" if p.build else "installed",
                     f"no: {not_here[p.name]}" if p.name in not_here else "yes", p.description]
                    for p in proxies.values()],
                   ["--behind", "binary", "available", "description"], tablefmt="simple",
                   maxcolwidths=[None, None, 60, 60]))
    from bench.core.workloads import DESCRIPTIONS
    print()
    print(tabulate([[test + (" *" if test in TESTS else ""), needs, what]
                    for test, (needs, what) in DESCRIPTIONS.items()],
                   ["--tests", "needs", "each request"], tablefmt="simple"))
    print(f"\n* the default four. --tests all: {', '.join(ALL_TESTS)}. The tests without a "
          f"database run once per server; the database suite's on the servers whose suite "
          f"column says yes.")
    return 0


def cmd_build(settings: Settings, specs: dict, hosts, behind: list[str] | None = None) -> int:
    from bench.core.plan import check_available
    from bench.infra.proxy import available_proxies
    from bench.paths import CACHE_DIR
    proxies = available_proxies()
    validate(settings, list(specs), list(proxies))
    unavailable = session.servers_unavailable(specs, hosts)
    check_available(settings.servers, unavailable)
    chosen = []
    for server_id in settings.servers or sorted(specs):
        if server_id in unavailable:
            print(f"not building {server_id}: unavailable on this machine: "
                  f"{unavailable[server_id]}")
        else:
            chosen.append(specs[server_id])
    # the proxies built from source (a `build` in proxy.toml), as the servers
    named = [p for p in behind or [] if p != "none"]
    not_here = session.proxies_unavailable(proxies, hosts)
    check_available(named, not_here)
    wanted = named if behind is not None else ([] if settings.servers else sorted(proxies))
    for name in wanted:
        if not proxies[name].build:
            continue
        if name in not_here:
            print(f"not building the {name} proxy: unavailable on this machine: "
                  f"{not_here[name]}")
        else:
            chosen.append(proxies[name])
    with session.Session(settings, hosts=hosts, needs=session.FOR_BUILD) as opened:
        failed = [sid for sid, built in opened.builds(chosen, CACHE_DIR) if not built.ok]
    return 1 if failed else 0


def cmd_run(settings: Settings, specs: dict, args: argparse.Namespace) -> int:
    from bench.cli.resume import NothingToDo, reopen
    from bench.core.plan import not_supported, plan
    from bench.infra.proxy import available_proxies
    from bench.runner import Run
    previous = None
    if args.resume and args.rerun_failed:
        raise SelectionError("--resume and --rerun-failed exclude each other")
    if args.resume or args.rerun_failed:
        kind = "resume" if args.resume else "rerun-failed"
        try:
            settings, previous = reopen(kind, args.resume or args.rerun_failed, settings, specs)
        except NothingToDo as done:
            print(done)
            return 0
        print(f"{kind}: {previous[1]} with its stored settings (other selection and load "
              f"flags are not used)")
    hosts = arguments.hosts_from(args)
    unavailable = session.servers_unavailable(specs, hosts)
    proxies = available_proxies()
    cases = plan(settings, specs, list(proxies), unavailable)
    session.check_proxies(settings, proxies, hosts)
    if not cases:
        print("nothing to run: the selection matches no case", file=sys.stderr)
        return EXIT_USAGE
    with session.Session(settings, cases, hosts=hosts, needs=session.FOR_RUN) as opened:
        try:
            run = Run(opened, cases, previous,
                      {k: v for k, v in unavailable.items() if not settings.servers},
                      not_supported=not_supported(settings, specs))
        except ValueError as exc:          # a stored schedule today's servers cannot give
            raise SelectionError(f"cannot continue {previous[1]}: {exc} (a server added or "
                                 f"removed since?)") from None
        doc = run.execute(getattr(args, "display", "auto"))
    if doc["status"] == "interrupted":
        return EXIT_INTERRUPTED
    bad = [c for c in doc["cases"] if c["status"] != results.OK]
    if doc["status"] != "complete" or bad:
        print(f"{len(bad)} of {len(doc['cases'])} cases are not ok (see the tables)",
              file=sys.stderr)
        return 1
    return 0


def clean_up_after_dead_runs() -> None:
    """Before this invocation starts anything: what a harness killed with SIGKILL left."""
    from bench.infra import cgroups, memory_cap, state
    from bench.infra.host import LOCAL
    for message in state.reap():
        print(message, file=sys.stderr, flush=True)
    for folder in cgroups.remove_leftovers(LOCAL) + memory_cap.remove_leftovers(LOCAL):
        print(f"removed the cgroup {folder} a killed harness left", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    # Ctrl-C must always stop a run cleanly, even when started from a shell that made
    # its background jobs ignore SIGINT (Python would then keep ignoring it)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in COMMANDS and argv[0] not in ("-h", "--help")):
        argv.insert(0, "run")
    if argv[0] == "doctor":            # its own flags; standard library only
        from bench.setup import doctor
        return doctor.main(argv[1:])
    args = parser().parse_args(argv)
    # every server and load generator this process starts inherits it: --connections
    # 10000 needs 10,000 open files in each (bench.infra.limits)
    from bench.infra.limits import raise_open_files
    raise_open_files()
    if args.command == "compare":
        return compare.run(args, Settings().results_dir)
    if args.command == "report":
        return report.report(args)
    if args.command == "history":
        return report.show_history(args)
    if args.command == "envs":
        return envs.run(args)
    if args.command == "images":
        return images.run(args)
    from bench.infra import state
    if args.command in ("run", "serve", "verify", "calibrate", "ab"):
        clean_up_after_dead_runs()
        state.activate()
    try:
        settings = arguments.settings_from(args)
        specs = manifest.discover(settings.servers_dirs)
        if args.command == "list":
            return cmd_list(specs)
        if args.command == "build":
            return cmd_build(settings, specs, arguments.hosts_from(args), args.behind)
        if args.command == "serve":
            from bench.cli.serve import serve
            return serve(settings, specs, args.server, args.database, args.orm,
                         arguments.hosts_from(args), args.protocol, args.serve_compressed)
        if args.command == "verify":
            from bench.cli.verify import verify_selection
            return verify_selection(settings, specs, arguments.hosts_from(args))
        if args.command == "ab":
            return ab.run(args, settings)
        if args.command == "calibrate":
            from bench.cli.calibrate import calibrate
            return calibrate(settings, specs, arguments.hosts_from(args))
        return cmd_run(settings, specs, args)
    except (SelectionError, manifest.ManifestError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except session.PreflightError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1
    except (wrk.LoadError, databases.ProvisionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        state.deactivate()
