"""The one list of what the set-up installs and checks: setup/packages.txt, as rows.

Standard library only: scripts/install_system_deps.sh runs this package with the
machine's own python3 before the virtualenv exists.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.paths import REPO

PACKAGES_FILE = REPO / "setup" / "packages.txt"
PURPOSES = ("run", "tests", "toolchain")
SOURCES = ("apt", "cargo", "go", "apt-if-new-enough", "bring")
# built by their own install scripts, scripts/install_<tool>.sh (a pinned crate / Go
# module), never by apt
BUILT_SOURCES = ("cargo", "go")
# the minimum of a toolchain is each server's own ([toolchain] in its manifest)
PER_MANIFEST = "manifests"


class PackagesError(ValueError):
    """setup/packages.txt does not say what it must."""


@dataclass(frozen=True)
class Requirement:
    tool: str                     # a command, lib:NAME, python:venv|Python.h or file:PATH
    purpose: str                  # run | tests | toolchain
    source: str                   # apt | cargo | go | apt-if-new-enough | bring
    packages: tuple[str, ...]     # alternatives, the first one the distribution has wins
    minimum: str | None           # None: any version; PER_MANIFEST: the servers say
    why: str

    @property
    def per_manifest(self) -> bool:
        return self.minimum == PER_MANIFEST

    def needed_for(self, purposes: tuple[str, ...]) -> bool:
        """Installed by a set-up for these purposes (toolchains are part of every one)."""
        return self.purpose in purposes or self.purpose == "toolchain"


def parse(text: str, origin: str = str(PACKAGES_FILE)) -> list[Requirement]:
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split(None, 5)
        if len(parts) < 6:
            raise PackagesError(f"{origin}:{number}: expected tool, for, source, package, "
                                f"minimum and why; got {line.strip()!r}")
        tool, purpose, source, package, minimum, why = parts
        if purpose not in PURPOSES:
            raise PackagesError(f"{origin}:{number}: 'for' must be one of {PURPOSES}, "
                                f"not {purpose!r}")
        if source not in SOURCES:
            raise PackagesError(f"{origin}:{number}: 'source' must be one of {SOURCES}, "
                                f"not {source!r}")
        if minimum == PER_MANIFEST and purpose != "toolchain":
            raise PackagesError(f"{origin}:{number}: only a toolchain's minimum comes from "
                                f"the manifests")
        rows.append(Requirement(tool, purpose, source,
                                tuple(p for p in package.split("|") if p != "-"),
                                None if minimum == "-" else minimum, why.strip()))
    tools = [r.tool for r in rows]
    twice = sorted({t for t in tools if tools.count(t) > 1})
    if twice:
        raise PackagesError(f"{origin}: listed twice: {', '.join(twice)}")
    return rows


def load(path: Path = PACKAGES_FILE) -> list[Requirement]:
    return parse(path.read_text(), str(path))


def by_tool(rows: list[Requirement]) -> dict[str, Requirement]:
    return {r.tool: r for r in rows}
