"""A reverse proxy's folder, `proxies/<name>/proxy.toml`, read into a ProxySpec (what
`--behind <name>` starts; proxies/README.md describes the file). Standard library only,
as the server manifests (bench.core.manifest): `run_bench.py doctor` reads both before the
virtualenv exists. Starting and stopping one is bench.infra.proxy.
"""
from __future__ import annotations

import re
import signal
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.manifest import ManifestError, Toolchain, parse_toolchain, read_toml
from bench.core.protocols import PROTOCOLS
from bench.paths import REPO

PROXIES_DIR = REPO / "proxies"


@dataclass(frozen=True)
class ProxySpec:
    name: str
    dir: Path
    description: str
    start: tuple[str, ...]
    env: dict = field(default_factory=dict)
    ready_timeout: float = 10.0
    stop_signal: str = "SIGTERM"
    notes: dict = field(default_factory=dict)
    # a regular expression over its worker processes' command lines: ready means all W of
    # them exist (as for a server); "" when they cannot be told apart
    workers_match: str = ""
    # programs it runs, checked before a run starts (as a server manifest's `requires`)
    requires: tuple[str, ...] = ()
    # argv run in its folder before a run that puts it in front (`{cache_dir}` is the
    # harness cache; the build puts its binary there), () for a proxy used as installed
    build: tuple[str, ...] = ()
    # what builds it and the lowest version that can, as a server manifest's [toolchain]
    toolchain: Toolchain | None = None
    # what clients may speak to it (bench.core.protocols): h1, and the TLS / HTTP/2
    # protocols it terminates, from BENCH_PROXY_PROTOCOL and BENCH_TLS_CERT / _KEY
    protocols: tuple[str, ...] = ("h1",)

    @property
    def id(self) -> str:
        """What bench.setup.toolchains names it by (as a server's id)."""
        return self.name

    @property
    def label(self) -> str:
        """Its key in a run's builds (results.json "builds"), next to the servers' ids:
        the case ids' part for it."""
        return f"behind-{self.name}"


def load_proxy(folder: Path) -> ProxySpec:
    """`folder/proxy.toml` as a ProxySpec; ManifestError names the file and the key."""
    path = folder / "proxy.toml"
    data = read_toml(path)
    name = data.get("name")
    if name != folder.name:
        raise ManifestError(f"{path}: name {name!r} must equal the folder name {folder.name!r}")
    start = data.get("start")
    if not isinstance(start, list) or not start or not all(isinstance(a, str) for a in start):
        raise ManifestError(f"{path}: 'start' must be a non-empty list of strings")
    stop_signal = data.get("stop_signal", "SIGTERM")
    if not isinstance(getattr(signal, str(stop_signal), None), signal.Signals):
        raise ManifestError(f"{path}: stop_signal {stop_signal!r} is not a signal name such as SIGTERM")
    return ProxySpec(name=name, dir=folder.resolve(), description=str(data.get("description", "")),
                     start=tuple(start), env={k: str(v) for k, v in data.get("env", {}).items()},
                     ready_timeout=float(data.get("ready_timeout", 10)),
                     stop_signal=stop_signal, notes=data.get("notes", {}),
                     workers_match=_workers_match(data.get("workers_match", ""), path),
                     requires=tuple(str(t) for t in data.get("requires", [])),
                     build=_argv(data, "build", path),
                     toolchain=parse_toolchain(data, path),
                     protocols=_protocols(data, path))


def _protocols(data: dict, path: Path) -> tuple[str, ...]:
    value = data.get("protocols", ["h1"])
    if not isinstance(value, list) or "h1" not in value or \
            any(p not in PROTOCOLS for p in value):
        raise ManifestError(f"{path}: 'protocols' must list h1 and any of "
                            f"{', '.join(PROTOCOLS[1:])}, got {value!r}")
    return tuple(value)


def _argv(data: dict, key: str, path: Path) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise ManifestError(f"{path}: {key!r} must be a list of strings (an argv)")
    return tuple(value)


def _workers_match(text, path: Path) -> str:
    try:
        re.compile(str(text))
    except re.error as exc:
        raise ManifestError(f"{path}: workers_match {text!r}: {exc}") from exc
    return str(text)


def available_proxies(proxies_dir: Path = PROXIES_DIR) -> dict[str, ProxySpec]:
    """Every proxies/<name>/proxy.toml, by name (sorted)."""
    return {p.parent.name: load_proxy(p.parent) for p in sorted(proxies_dir.glob("*/proxy.toml"))}
