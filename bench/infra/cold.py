"""A cold build: a server built as on a machine that never built it, what a fresh CI
runner without a cache pays. Everything the build would reuse is new and empty:

- a copy of the checkout's servers folder without what a build leaves in it
  (bench.infra.checkout.NOT_CODE: node_modules, target, __pycache__), so that npm ci
  installs anew and no build output is found;
- an empty harness cache (`{cache_dir}`: the Rust workspace's mirror and target, Go's
  binary, Maven's local repository and jar, each Python server's virtualenv);
- each toolchain's own caches pointed into the same throwaway folder (COLD_ENV): Go's
  build and module caches, Cargo's registry, npm's and pip's download caches.

So dependencies are downloaded from their registries and compiled anew: the figure
includes the downloads (the network's speed, on this machine's link), as a fresh runner's
would. The toolchains themselves (rustc, go, node, the JDK, Python) are not rebuilt. The
folder is removed afterwards. The build is the manifest's own, run by
bench.infra.server.build on a `ColdHost`: this machine, with those caches.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from pathlib import Path

from bench.core.manifest import ServerSpec
from bench.infra.checkout import NOT_CODE
from bench.infra.host import LocalHost

# each toolchain's cache, as its environment variable names it -> the folder in the
# throwaway root; GOFLAGS -modcacherw: Go makes its module cache read-only, which would
# stop the folder's removal
COLD_ENV = {"GOCACHE": "go-build", "GOMODCACHE": "go-mod", "CARGO_HOME": "cargo-home",
            "npm_config_cache": "npm", "PIP_CACHE_DIR": "pip"}


class ColdHost(LocalHost):
    """This machine, with the harness cache and the toolchains' caches in `root`."""

    def __init__(self, root: Path):
        super().__init__()
        self.root = Path(root)

    def cache_dir(self) -> str:
        return str(self.root / "cache")

    def run(self, argv, *, env: dict | None = None, **kwargs):
        cold = dict(os.environ if env is None else env)
        cold.update({name: str(self.root / folder) for name, folder in COLD_ENV.items()})
        cold["GOFLAGS"] = " ".join(filter(None, (cold.get("GOFLAGS"), "-modcacherw")))
        return super().run(argv, env=cold, **kwargs)


def cold_copy(spec: ServerSpec, root: Path) -> ServerSpec:
    """The server as a copy of its servers folder under `root` (without build leftovers)."""
    servers = root / "servers"
    shutil.copytree(spec.dir.parent, servers, symlinks=True,
                    ignore=shutil.ignore_patterns(*NOT_CODE))
    return dataclasses.replace(spec, dir=servers / spec.dir.name, cache_dir=None)


def cold_build(spec: ServerSpec, build, log_path: Path) -> float:
    """Seconds of `build(spec, host)` (bench.infra.server.build with the run's settings)
    on a cold copy: ServerError as that build raises it. The copy goes afterwards, even
    on Ctrl-C."""
    root = Path(tempfile.mkdtemp(prefix=f"webbench-cold-{spec.id}-"))
    try:
        with open(log_path, "a") as log:
            log.write(f"# a cold build in {root} (bench.infra.cold)\n")
        return build(cold_copy(spec, root), ColdHost(root))
    finally:
        shutil.rmtree(root, ignore_errors=True)
