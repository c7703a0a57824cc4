"""Which distribution packages a set-up installs on this machine: what setup/packages.txt
lists for the purposes asked (run; run and tests) whose tool is missing, and a toolchain
the distribution packages new enough for the servers' manifests. Installs nothing.

    python3 -m bench.setup.plan --for run,tests

prints one package per line (what scripts/install_system_deps.sh hands to apt-get) and,
on standard error, one line per toolchain it cannot provide, with what follows.
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from bench.core import manifest
from bench.setup import packages, probe


@dataclass
class SetupPlan:
    install: list[str] = field(default_factory=list)     # packages for apt-get
    notes: list[str] = field(default_factory=list)       # what the set-up cannot provide


def apt_candidate(package: str) -> str | None:
    """The version apt would install (epoch and Debian revision stripped), or None."""
    if not shutil.which("apt-cache"):
        return None
    done = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True)
    match = re.search(r"Candidate:\s*(\S+)", done.stdout)
    if not match or match.group(1) == "(none)":
        return None
    upstream = probe.VERSION.search(re.sub(r"^\d+:", "", match.group(1)))
    return upstream.group(1) if upstream else match.group(1)


def apt_has(package: str) -> bool:
    return apt_candidate(package) is not None


def choose(alternatives: tuple[str, ...], has=apt_has) -> str:
    """The first alternative the distribution has (nginx-light on Debian, nginx on
    Ubuntu 24.04), else the first one, so apt's own error names it."""
    return next((p for p in alternatives if has(p)), alternatives[0])


def effective_minimum(command: str, specs: dict) -> tuple[str | None, str | None, list[str]]:
    """For a toolchain: the lowest version every server using it accepts (a version that
    fetches the newer one itself counts), the highest minimum they declare, and those
    servers."""
    accepted = declared = None
    users = []
    for spec in specs.values():
        chain = spec.toolchain
        if chain is None or chain.command != command:
            continue
        accepts = chain.fetches_newer_from or chain.minimum
        if accepted is None or probe.version_tuple(accepts) > probe.version_tuple(accepted):
            accepted = accepts
        if declared is None or \
                probe.version_tuple(chain.minimum) > probe.version_tuple(declared):
            declared = chain.minimum
        users.append(spec.id)
    return accepted, declared, users


def _what_is_there(row: packages.Requirement, found: probe.Found) -> str:
    return f"{row.tool} {found.version} is too old" if found.present else \
        f"{row.tool} is not installed"


def make_plan(purposes: tuple[str, ...], rows: list[packages.Requirement], specs: dict,
              find=probe.find, candidate=None) -> SetupPlan:
    candidate = candidate or apt_candidate
    plan = SetupPlan()
    for row in rows:
        if not row.needed_for(purposes) or row.source in packages.BUILT_SOURCES:
            continue
        found = find(row.tool)
        if row.source == "apt":
            if not found.present:
                plan.install.append(choose(row.packages, lambda p: candidate(p) is not None))
            continue
        # apt-if-new-enough: only a toolchain the distribution has in a version that works
        minimum, _, users = effective_minimum(row.tool, specs) if row.per_manifest \
            else (row.minimum, None, [])
        if found.present and probe.at_least(found.version, minimum):
            continue
        servers = f"{', '.join(users)} will be unavailable" if users else \
            "what needs it will be unavailable"
        if row.source == "bring":
            plan.notes.append(f"{_what_is_there(row, found)} (needs >= {minimum}; {row.why}): {servers} until it is "
                              f"installed (README, Prerequisites)")
            continue
        package = choose(row.packages, lambda p: candidate(p) is not None)
        offered = candidate(package)
        if offered is not None and probe.at_least(offered, minimum) and \
                not (found.present and probe.version_tuple(offered) <=
                     probe.version_tuple(found.version or "0")):
            plan.install.append(package)
            continue
        offer = f"the distribution's {package} is {offered}" if offered else \
            f"the distribution has no {package}"
        plan.notes.append(f"{_what_is_there(row, found)} and {offer} (needs >= {minimum}): {servers} until a "
                          f"newer {row.tool} is installed (README, Prerequisites)")
    plan.install = list(dict.fromkeys(plan.install))
    return plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m bench.setup.plan", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--for", dest="purposes", default="run",
                        help="comma-separated purposes: run, tests (default: run)")
    args = parser.parse_args(argv)
    purposes = tuple(p for p in args.purposes.split(",") if p)
    unknown = [p for p in purposes if p not in ("run", "tests")]
    if unknown:
        parser.error(f"unknown purpose {', '.join(unknown)}; known: run, tests")
    try:
        rows = packages.load()
        specs = manifest.discover()
    except (packages.PackagesError, manifest.ManifestError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    plan = make_plan(purposes, rows, specs)
    for note in plan.notes:
        print(f"note: {note}", file=sys.stderr)
    print("\n".join(plan.install))
    return 0


if __name__ == "__main__":
    sys.exit(main())
