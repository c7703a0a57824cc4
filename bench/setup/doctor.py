"""`run_bench.py doctor` (and `make doctor`): every tool and toolchain the project uses,
the version found, the minimum and why, OK / missing / too old; which servers and
--behind proxies this machine can build and run; and what `make setup` would install. It installs nothing,
and it runs before the virtualenv exists (standard library only).

Exit status: 0 when every tool is OK and every server available, 1 when something is
missing or too old (the last lines say what `make setup` would do about it and what it
cannot), 2 when setup/packages.txt or a manifest cannot be read.
"""
from __future__ import annotations

import argparse
import sys

from bench.core import manifest, proxyspec
from bench.setup import counters, packages, plan, probe, toolchains

OK, MISSING, TOO_OLD = "OK", "missing", "too old"


def status(found: probe.Found, minimum: str | None) -> str:
    if not found.present:
        return MISSING
    return OK if probe.at_least(found.version, minimum) else TOO_OLD


def table(rows: list[list[str]], header: list[str]) -> str:
    """Plain aligned columns (the doctor runs before tabulate is installed)."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


def tool_rows(rows: list[packages.Requirement], specs: dict, find) -> tuple[list, list]:
    """The table's rows, and the (tool, status) of each."""
    out, states = [], []
    for row in rows:
        found = find(row.tool)
        minimum, why = row.minimum, row.why
        if row.per_manifest:
            minimum, declared, _ = plan.effective_minimum(row.tool, specs)
            if declared and declared != minimum:
                why = f"{why} (servers declare >= {declared}; >= {minimum} fetches it)"
        state = status(found, minimum)
        where = "-" if not found.present else \
            f"{found.version} ({found.path})" if found.version else found.path
        out.append([row.tool, where, f">= {minimum}" if minimum else "any", row.purpose,
                    state, why])
        states.append((row, state))
    return out, states


def server_rows(specs: dict, unavailable: dict) -> list[list[str]]:
    """A row per server (or proxy): what it needs, whether it is here, and the workloads
    its manifest says it does not support (a server's [unsupported]), with why."""
    rows = []
    for server_id, spec in specs.items():
        chain = spec.toolchain
        need = f"{chain.command} >= {chain.minimum}" if chain else \
            (", ".join(spec.requires) or "-")
        why = [unavailable.get(server_id, "")] if server_id in unavailable else []
        why += [f"{test} not supported: {reason}"
                for test, reason in (getattr(spec, "unsupported", None) or {}).items()]
        rows.append([server_id, need, "unavailable" if server_id in unavailable else OK,
                     "; ".join(why)])
    return rows


def what_setup_would_do(states, setup_plan: plan.SetupPlan) -> list[str]:
    lines = []
    if setup_plan.install:
        lines.append(f"apt-get install {' '.join(setup_plan.install)}")
    for row, state in states:
        if state != OK and row.source in packages.BUILT_SOURCES:
            how = "cargo install" if row.source == "cargo" else "go install"
            lines.append(f"build {row.tool} with {how} ({', '.join(row.packages)}, "
                         f"scripts/install_{row.tool}.sh)")
    return lines


def counter_rows(find) -> list[list[str]]:
    """Which counter this machine has for each figure of a count, best first."""
    found = counters.instruction_counter(find=find)
    syscalls = counters.syscall_counter(find=find)
    return [["instructions per request", found.method or "none", found.why],
            ["system calls per request", syscalls.method or "none", syscalls.why]]


def docker_rows(find) -> list[list[str]]:
    """The Docker engine and compose --db-mode docker would use (informational: the
    default run needs neither). Asked with the standard library, as the rest of doctor;
    a run asks bench.infra.containers.engine, which also says how to start an engine."""
    server = probe.say_version(["docker", "version", "--format", "{{.Server.Version}}"]) \
        if probe.which("docker") else None
    dockerd = find("dockerd")
    rows = [["engine", server or dockerd.version or "-",
             "answers" if server else
             "installed, not running (scripts/docker_engine.sh start)" if dockerd.path else
             "not installed (Debian: docker.io)"]]
    plugin = probe.say_version(["docker", "compose", "version", "--short"]) \
        if probe.which("docker") else None
    standalone = find("docker-compose")
    rows.append(["compose", plugin or standalone.version or "-",
                 "docker compose (plugin)" if plugin else standalone.path or
                 "none (bash scripts/install_docker-compose.sh builds v2)"])
    return rows


def main(argv: list[str] | None = None, find=probe.find) -> int:
    parser = argparse.ArgumentParser(
        prog="run_bench.py doctor",
        description="What this machine has of what the project needs; installs nothing.")
    parser.add_argument("--for", dest="purposes", default="run,tests",
                        help="whose needs decide the exit status: run, or run,tests "
                             "(default: %(default)s)")
    args = parser.parse_args(argv)
    purposes = tuple(args.purposes.split(","))
    try:
        rows, specs = packages.load(), manifest.discover()
        proxies = proxyspec.available_proxies()
    except (packages.PackagesError, manifest.ManifestError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cached = probe.memoized(find)      # one probe per tool, however often it is asked
    tools, states = tool_rows(rows, specs, cached)
    print("Tools and toolchains (setup/packages.txt):\n")
    print(table(tools, ["tool", "found", "minimum", "for", "status", "why"]))
    unavailable = toolchains.unavailable(specs, cached)
    print("\nServers (each manifest's [toolchain] and requires):\n")
    print(table(server_rows(specs, unavailable), ["server", "needs", "status", "why not"]))
    proxies_out = toolchains.unavailable(proxies, cached)
    print("\nProxies for --behind (each proxy.toml's [toolchain] and requires):\n")
    print(table(server_rows(proxies, proxies_out), ["proxy", "needs", "status", "why not"]))
    print("\nCounters for --instructions (bench/setup/counters.py):\n")
    print(table(counter_rows(cached), ["figure", "counter", "what was found"]))
    print("\nDocker for --db-mode docker (bench/infra/containers; not needed by default):\n")
    print(table(docker_rows(cached), ["part", "version", "state"]))
    setup_plan = plan.make_plan(purposes, rows, specs, find=cached)
    actions = what_setup_would_do(states, setup_plan)
    print("\nWhat `make setup` would do:" if actions else
          "\n`make setup` would install nothing" + (" (what is missing, it cannot install):"
                                                     if setup_plan.notes else "."))
    for action in actions:
        print(f"  {action}")
    for note in setup_plan.notes:
        print(f"  cannot: {note}")
    bad = [row.tool for row, state in states if state != OK and row.needed_for(purposes)]
    if bad or unavailable or proxies_out:
        print(f"\nnot OK: {', '.join(bad) or 'no tool'}"
              + (f"; servers unavailable: {', '.join(unavailable)}" if unavailable else "")
              + (f"; proxies unavailable: {', '.join(proxies_out)}" if proxies_out else ""))
        return 1
    print("\nall OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
