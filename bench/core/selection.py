"""Which servers' checks a change calls for, from the paths it changed (as TechEmpower's
CI does: a framework is verified when its folder changed, everything when the toolset
did). Pure: the paths and each server's shared folders in, a Selection out;
bench/cli/changed.py asks git and the manifests.

Two rules:
- "servers" (`make test`): only changes under servers/ select servers. The harness's own
  tests run in that tier whatever changed, so a harness change needs no server there.
- "full" (`make test-changed`, the pull-request check): a change to the harness (bench/,
  tests/, setup/, scripts/, the Makefile, the request scripts, anything not documentation
  and not a server's) selects every server, since every server's checks run through it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

RULES = ("servers", "full")
SERVERS_PREFIX = "servers/"
# documentation only: read by people, never by a check (docs/openapi.yaml is read by the
# fuzz tests, so it is not in here)
DOCS_SUFFIXES = (".md", ".png", ".svg")
DOCS_FOLDERS = ("docs/images/",)


@dataclass
class Selection:
    """`everything`: why every server is selected ('' when not); `servers`: id -> why."""
    everything: str = ""
    servers: dict[str, str] = field(default_factory=dict)

    def ids(self, every: list[str]) -> list[str]:
        return sorted(every) if self.everything else sorted(self.servers)

    def line(self) -> str:
        """The one line printed before anything runs."""
        if self.everything:
            return f"selected servers: every server ({self.everything})"
        if not self.servers:
            return "selected servers: none (no server's files changed)"
        return "selected servers: " + ", ".join(f"{sid} ({why})"
                                                for sid, why in sorted(self.servers.items()))


def _is_docs(path: str) -> bool:
    return path.endswith(DOCS_SUFFIXES) or path.startswith(DOCS_FOLDERS)


def _named(paths: list[str], most: int = 3) -> str:
    shown = ", ".join(paths[:most])
    return shown + (f" and {len(paths) - most} more" if len(paths) > most else "")


def select(changed: list[str], shared: dict[str, set[str]], rule: str = "full") -> Selection:
    """`changed`: repository-relative paths (posix); `shared`: server id -> the entries of
    servers/ it uses besides its own folder (its shared code, a workspace's Cargo files)."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; known: {RULES}")
    selection = Selection()
    harness: list[str] = []
    by_entry: dict[str, list[str]] = {}
    for path in sorted(set(changed)):
        if _is_docs(path):
            continue
        if path.startswith(SERVERS_PREFIX):
            by_entry.setdefault(PurePosixPath(path).parts[1], []).append(path)
        else:
            harness.append(path)
    if rule == "full" and harness:
        top = sorted({PurePosixPath(p).parts[0] + ("/" if "/" in p else "") for p in harness})
        selection.everything = f"the harness changed: {_named(top)}"
        return selection
    for entry, paths in by_entry.items():
        if entry in shared:
            selection.servers[entry] = f"servers/{entry} changed"
    for sid, entries in shared.items():
        if sid in selection.servers:
            continue
        used = sorted(set(entries) & set(by_entry))
        if used:
            selection.servers[sid] = f"uses servers/{_named(used)}, changed"
    return selection
