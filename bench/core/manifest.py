"""Reading `servers/<id>/manifest.toml`: what a server is, how to build and start it.

This is the only place that knows the manifest format (documented in servers/README.md);
the rest of the harness sees `ServerSpec` objects and never names a framework.
"""
from __future__ import annotations

import signal
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from bench.paths import SERVERS_DIR

KNOWN_DATABASES = ("postgres", "mysql")
CONCURRENCY = ("processes", "threads")


class ManifestError(ValueError):
    pass


# eq=False: a spec is loaded once per run and compared by identity, which also makes
# it (and the Variant holding it) hashable despite its dict fields
@dataclass(frozen=True, eq=False)
class ServerSpec:
    id: str
    dir: Path
    description: str
    language: str
    concurrency: str                 # "processes" | "threads"
    databases: tuple[str, ...]
    orm: tuple[bool, ...]
    build: tuple[str, ...]
    start: tuple[str, ...]
    env: dict = field(default_factory=dict)
    ready_timeout: float = 60.0
    notes: dict = field(default_factory=dict)
    stop_signal: str = "SIGTERM"     # sent to the whole process group to stop the server

    def variants(self) -> list[tuple[str, bool]]:
        """(database, orm) pairs the server supports, in manifest order."""
        return [(d, o) for d in self.databases for o in self.orm]

    def pool_size(self, budget: int, workers: int) -> int:
        """DB connections per process: the budget split evenly over the processes."""
        processes = workers if self.concurrency == "processes" else 1
        return max(1, budget // processes)


def _require(data: dict, key: str, kind: type, path: Path):
    if key not in data:
        raise ManifestError(f"{path}: missing key {key!r}")
    if not isinstance(data[key], kind):
        raise ManifestError(f"{path}: {key!r} must be a {kind.__name__}")
    return data[key]


def _stop_signal(name: str, path: Path) -> str:
    if not isinstance(name, str) or not isinstance(getattr(signal, name, None), signal.Signals):
        raise ManifestError(f"{path}: stop_signal {name!r} is not a signal name such as SIGTERM")
    return name


def load_manifest(folder: Path) -> ServerSpec:
    path = folder / "manifest.toml"
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"{path}: {exc}") from exc
    server_id = _require(data, "id", str, path)
    if server_id != folder.name:
        raise ManifestError(f"{path}: id {server_id!r} must equal the folder name {folder.name!r}")
    concurrency = _require(data, "concurrency", str, path)
    if concurrency not in CONCURRENCY:
        raise ManifestError(f"{path}: concurrency must be one of {CONCURRENCY}")
    databases = tuple(_require(data, "databases", list, path))
    unknown = set(databases) - set(KNOWN_DATABASES)
    if unknown:
        raise ManifestError(f"{path}: unknown databases {sorted(unknown)}; known: {KNOWN_DATABASES}")
    start = tuple(_require(data, "start", list, path))
    if not start:
        raise ManifestError(f"{path}: 'start' must not be empty")
    return ServerSpec(
        id=server_id, dir=folder.resolve(),
        description=data.get("description", ""), language=data.get("language", ""),
        concurrency=concurrency, databases=databases,
        orm=tuple(bool(o) for o in data.get("orm", [False])),
        build=tuple(data.get("build", [])), start=start,
        env={k: str(v) for k, v in data.get("env", {}).items()},
        ready_timeout=float(data.get("ready_timeout", 60)),
        notes=data.get("notes", {}),
        stop_signal=_stop_signal(data.get("stop_signal", "SIGTERM"), path),
    )


def discover(servers_dirs: list[Path] | None = None) -> dict[str, ServerSpec]:
    """Every folder with a manifest.toml, by id (sorted). Later folders may add servers."""
    specs: dict[str, ServerSpec] = {}
    for root in servers_dirs or [SERVERS_DIR]:
        for manifest in sorted(Path(root).glob("*/manifest.toml")):
            spec = load_manifest(manifest.parent)
            specs[spec.id] = spec
    return specs


def expand(template: str, values: dict[str, str]) -> str:
    """Fill `{placeholder}`s; an unknown one is a manifest error, not a KeyError."""
    try:
        return template.format(**values)
    except KeyError as exc:
        raise ManifestError(f"unknown placeholder {exc} in {template!r}; "
                            f"known: {sorted(values)}") from exc
