"""Each server's declared toolchain ([toolchain] in its manifest) and required programs
(`requires`), checked against this machine (a --behind proxy's proxy.toml declares both
the same way, bench.core.proxyspec, and is checked by the same code): a server is available, or unavailable with
one line saying why and what to do. A run of "all servers" leaves unavailable ones out
and says so; naming one is refused (exit 2) with the reason. So a missing or too-old
toolchain never shows up as a failed build in the middle of a run.
"""
from __future__ import annotations

from typing import Callable

from bench.core.manifest import ServerSpec
from bench.core.proxyspec import ProxySpec
from bench.setup import probe

# what a user does about a missing toolchain: see the README's "Prerequisites"
HOW_TO_GET = {
    "go": "install Go from https://go.dev/dl (the tarball in /usr/local/go; the Makefile "
          "puts /usr/local/go/bin on PATH)",
    "cargo": "install Rust with rustup (https://rustup.rs; the Makefile puts ~/.cargo/bin "
             "on PATH)",
    "node": "install Node.js from https://nodejs.org or NodeSource's packages",
    "nginx": "`make setup` installs it (nginx-light)",
}

Finder = Callable[[str], probe.Found]


def toolchain_problem(spec: ServerSpec | ProxySpec, find: Finder = probe.find) -> str | None:
    """Why the server's toolchain rules it out on this machine, or None."""
    chain = spec.toolchain
    if chain is None:
        return None
    need = f"{spec.id} needs {chain.command} >= {chain.minimum} ({chain.reason})"
    found = find(chain.command)
    hint = HOW_TO_GET.get(chain.command, "see the README's prerequisites")
    if not found.present:
        return f"{chain.command} is not installed (not on PATH): {need}; {hint}"
    if probe.at_least(found.version, chain.minimum):
        return None
    if chain.fetches_newer_from and probe.at_least(found.version, chain.fetches_newer_from):
        return None
    older = f"{chain.command} {found.version or '(version unknown)'} at {found.path}"
    fetch = (f" (from {chain.fetches_newer_from} on it would fetch {chain.minimum} itself)"
             if chain.fetches_newer_from else "")
    return f"{older} is too old{fetch}: {need}; {hint}"


def requires_problem(spec: ServerSpec | ProxySpec, find: Finder = probe.find) -> str | None:
    missing = [tool for tool in spec.requires if not find(tool).present]
    if not missing:
        return None
    hints = "; ".join(HOW_TO_GET.get(t, "see the README's prerequisites") for t in missing)
    return f"{', '.join(missing)} not installed (not on PATH), which {spec.id} needs; {hints}"


def unavailable(specs: dict[str, ServerSpec] | dict[str, ProxySpec], find: Finder = probe.find) -> dict[str, str]:
    """id -> why, for every server this machine cannot build or run. One probe per tool."""
    cached = probe.memoized(find)
    out = {}
    for server_id, spec in specs.items():
        problem = toolchain_problem(spec, cached) or requires_problem(spec, cached)
        if problem:
            out[server_id] = problem
    return out

