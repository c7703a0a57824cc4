"""A server's own dependencies, built from its own files and cached by their content.

- **Python**: a server whose folder has a requirements.txt and whose start command runs
  `{python}` gets a virtualenv of its own, made from that file (its `-r` includes
  inlined, a --dep pin applied) and cached under `<cache>/envs/python-<hash>`: the hash
  of that text and the interpreter's version. Two checkouts (`ab`) whose requirements
  differ get two environments; the same requirements share one. The harness's
  .venv stays the harness's own: no server runs from it.
- **Go, Node.js or Rust, with a --dep**: a copy of the server's folder (its siblings
  linked, so that `../_gocommon` still resolves) under `<cache>/envs/go-<hash>`
  (npm-, cargo-), where `go mod edit` + `go mod tidy` (`npm install
  --package-lock-only`, `cargo update --precise`) resolve the asked version into the
  copy's lock file; it builds and starts from the copy, into a cache folder of its own.
  A Rust server's copy is its whole Cargo workspace (the members copied, the lock file
  shared by all), and its target folder starts as a copy of the main build's, so that
  cargo rebuilds only what the bump changes (and the workspace's own crates).
- Without a --dep, every ecosystem already builds from the version's own lock file in
  the version's own folder (Cargo.lock with --locked, package-lock.json with npm ci,
  go.sum with -mod=readonly), into a cache per version (`ab`): nothing to do here.

An environment is complete once its marker file is written (after pip or go finished);
a half-made one is made again. Each use touches `last_used`; `prune` removes those
unused for PRUNE_AFTER_DAYS (run after a new one is made, and by `run_bench.py envs
--prune`).
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import re
import shutil
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bench.core import deps as core_deps
from bench.core.manifest import ServerSpec
from bench.infra.seam import Host
from bench.paths import CACHE_DIR

MARKER = ".complete"                 # written last: the environment is whole
LAST_USED = "last_used"
PRUNE_AFTER_DAYS = 30
ENV_TIMEOUT_S = 900                  # pip building sdists from source on 2 cores, never this
_INCLUDE = re.compile(r"^\s*(-r|--requirement)\s+(\S+)")


class EnvError(RuntimeError):
    """An environment could not be made; `log` names the file with pip's or go's output."""

    def __init__(self, what: str, log: Path | None = None):
        super().__init__(what)
        self.log = log


def requirements_text(path: Path, seen: frozenset[Path] = frozenset()) -> str:
    """A requirements file with its `-r other.txt` includes inlined (relative to the
    including file), so that the environment's key is its whole content."""
    path = path.resolve()
    if path in seen:
        raise EnvError(f"{path}: includes itself (-r)")
    out = []
    for line in path.read_text().splitlines():
        m = _INCLUDE.match(line)
        if m:
            out.append(f"# from {m.group(2)}")
            out.append(requirements_text(path.parent / m.group(2), seen | {path}).rstrip("\n"))
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def python_kind(spec: ServerSpec) -> bool:
    """The server runs from a virtualenv of its own: its folder has a requirements.txt and
    its start command runs `{python}` (nginx's start.py runs on the harness's Python and
    has no requirements)."""
    return (spec.dir / "requirements.txt").is_file() and any("{python}" in a for a in spec.start)


OVERLAID = ("go", "npm", "cargo")  # a --dep is applied to a copy of the server's folder


def overlay_kind(spec: ServerSpec) -> str | None:
    """"go", "npm" or "cargo" for a --dep version of such a server (built from a copy of
    its folder whose go.mod / package-lock.json / Cargo.lock resolves the asked
    version), else None."""
    kind = core_deps.ecosystem(spec.dir) if spec.deps else None
    return kind if kind in OVERLAID else None


def needed(spec) -> bool:
    """Whether a build step must prepare an environment for this spec (a ProxySpec: no)."""
    return isinstance(spec, ServerSpec) and (python_kind(spec) or overlay_kind(spec) is not None)


@functools.lru_cache(maxsize=256)
def _python_key(spec: ServerSpec) -> tuple[str, str]:
    text = requirements_text(spec.dir / "requirements.txt")
    if spec.deps:
        text = core_deps.with_overrides(text, spec.deps)
    runtime = f"{platform.python_implementation()} {platform.python_version()}"
    key = hashlib.sha256(f"{runtime}\n{text}".encode()).hexdigest()[:16]
    return key, text


@functools.lru_cache(maxsize=256)
def _overlay_key(spec: ServerSpec) -> str:
    from bench.infra.checkout import code_hash
    wanted = json.dumps(sorted(spec.deps.items()))
    # the copy links its siblings (../_gocommon) in this checkout: another clone's copy
    # would point into a folder that may be gone (a removed clone broke a Go build)
    checkout = spec.dir.parent.resolve()
    return hashlib.sha256(f"{code_hash(spec)}\n{wanted}\n{checkout}".encode()).hexdigest()[:16]


def _root(host: Host, name: str) -> str:
    return f"{host.cache_dir()}/envs/{name}"


@dataclass(frozen=True)
class Location:
    """Where a server runs from on a host: `python` its interpreter (None: the
    harness's), `dir` its folder, `cache_dir` its build outputs (None: the default)."""
    python: str | None = None
    dir: str | None = None
    cache_dir: str | None = None
    env_root: str | None = None


def location(spec: ServerSpec, host: Host) -> Location:
    """Paths only, no work: what the template values of a server are made of."""
    if python_kind(spec):
        root = _root(host, f"python-{_python_key(spec)[0]}")
        return Location(python=f"{root}/bin/python", env_root=root)
    if overlay_kind(spec):
        root = _root(host, f"{overlay_kind(spec)}-{_overlay_key(spec)}")
        return Location(dir=f"{root}/servers/{spec.dir.name}", cache_dir=f"{root}/build",
                        env_root=root)
    return Location()


def prepare(spec: ServerSpec, host: Host, log_path: Path, lock) -> float:
    """Make the server's environment unless it is complete already; seconds spent (0.0
    when cached). `lock(name, folder)`: the build lock (bench.infra.server), held while
    it is made, so two workers or runs wait for one another. EnvError on failure, with
    the half-made environment removed."""
    where = location(spec, host)
    if where.env_root is None:
        return 0.0
    if host.remote and not python_kind(spec):
        raise EnvError(f"{spec.label}: a --dep of a Go, Node.js or Rust server is built on this "
                       f"machine only (its server role is on {host.describe_where()})")
    name = Path(where.env_root).name
    with lock(f"env-{name}", host.cache_dir()):
        if _exists(host, f"{where.env_root}/{MARKER}"):
            _touch(host, f"{where.env_root}/{LAST_USED}")
            return 0.0
        started = time.monotonic()
        _remove(host, where.env_root)
        try:
            if python_kind(spec):
                _make_python(spec, host, where, log_path)
            else:
                _make_overlay(spec, where, log_path)
        except BaseException:
            _remove(host, where.env_root)
            raise
        seconds = time.monotonic() - started
        _write(host, f"{where.env_root}/{MARKER}", json.dumps(
            {"server": spec.label, "seconds": round(seconds, 1), "made": time.time()}))
        _touch(host, f"{where.env_root}/{LAST_USED}")
    if not host.remote:
        prune()
    return seconds


def _run(host: Host, argv: list[str], log_path: Path, what: str, cwd: str | None = None,
         env: dict | None = None) -> str:
    done = host.run(argv, timeout=ENV_TIMEOUT_S, cwd=cwd, env=env)
    with open(log_path, "a") as log:
        log.write(f"$ {' '.join(argv)}\n{done.stdout}{done.stderr}")
    if done.timed_out or done.returncode != 0:
        last = next((line.strip() for line in reversed((done.stderr or done.stdout)
                                                       .splitlines()) if line.strip()), "")
        raise EnvError(f"{what} failed"
                       f"{f' (exit {done.returncode})' if not done.timed_out else ' (timed out)'}"
                       f"{f': {last[:300]}' if last else ''}", log_path)
    return done.stdout


def _make_python(spec: ServerSpec, host: Host, where: Location, log_path: Path) -> None:
    root = where.env_root
    harness_python = host.project_path(sys.executable)
    _run(host, [harness_python, "-m", "venv", root], log_path,
         f"python -m venv for {spec.label}")
    _write(host, f"{root}/requirements.txt", _python_key(spec)[1])
    _run(host, [where.python, "-m", "pip", "install", "--disable-pip-version-check",
                "--no-input", "-q", "-r", f"{root}/requirements.txt"], log_path,
         f"pip install of {spec.label}'s requirements")
    freeze = _run(host, [where.python, "-m", "pip", "list", "--format=json",
                         "--disable-pip-version-check"], log_path, "pip list")
    try:
        installed = {p["name"]: p["version"] for p in json.loads(freeze)}
    except (ValueError, KeyError, TypeError) as exc:
        raise EnvError(f"pip list of {spec.label}'s environment is unreadable: {exc}",
                       log_path) from exc
    installed["python"] = platform.python_version() if not host.remote else \
        _run(host, [where.python, "-c", "import platform; print(platform.python_version())"],
             log_path, "python --version").strip()
    _write(host, f"{root}/installed.json", json.dumps(installed, indent=1, sort_keys=True))


def _make_overlay(spec: ServerSpec, where: Location, log_path: Path) -> None:
    """A copy of the server's folder beside links to its siblings (so `../_gocommon` and
    `../_jscommon` still resolve), where the ecosystem's own tool resolves the asked
    versions into its lock file: `go mod edit -require` + `go mod tidy` (the Go module
    proxy), `npm install --package-lock-only --save-exact` (the npm registry). The
    manifest's build then runs in the copy, from that lock file, as it always does."""
    from bench.infra.checkout import NOT_CODE
    servers = Path(where.env_root) / "servers"
    mine = Path(where.dir)
    kind = overlay_kind(spec)
    # what is copied: the server's folder; for Rust, its whole workspace (the lock file
    # is the workspace's, and a member outside the copy would not be part of it)
    copied = {spec.dir.name: spec.dir} if kind != "cargo" else _cargo_workspace(spec)
    for name, source in copied.items():
        if source.is_dir():
            shutil.copytree(source, servers / name, ignore=shutil.ignore_patterns(*NOT_CODE))
        else:
            servers.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, servers / name)
    for sibling in spec.dir.parent.iterdir():
        if sibling.name not in copied:
            (servers / sibling.name).symlink_to(sibling.resolve())
    if kind == "cargo":
        for crate, version in spec.deps.items():
            _run_local(["cargo", "update", "--package", crate, "--precise", version], mine,
                       dict(os.environ), log_path,
                       f"cargo update --package {crate} --precise {version} (crates.io)")
        _seed_cargo_target(spec, where, log_path)
        return
    if kind == "npm":
        asked = [f"{name}@{version}" for name, version in spec.deps.items()]
        _run_local(["npm", "install", "--package-lock-only", "--save-exact", "--no-audit",
                    "--no-fund", *asked], mine, dict(os.environ), log_path,
                   f"npm install --package-lock-only {' '.join(asked)}")
        return
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    for module, version in spec.deps.items():
        wanted = version if version.startswith("v") else f"v{version}"
        _run_local(["go", "mod", "edit", f"-require={module}@{wanted}"], mine, env, log_path,
                   f"go mod edit -require={module}@{wanted}")
    _run_local(["go", "mod", "tidy"], mine, env, log_path,
               f"go mod tidy of {spec.label} (the Go module proxy)")


def _cargo_workspace(spec: ServerSpec) -> dict[str, Path]:
    """{name in the copy: source} of a Rust server's Cargo workspace: the root's
    Cargo.toml and Cargo.lock and every member folder, when the workspace root is the
    server's parent folder (servers/); the server's folder alone when it is a crate of
    its own (its lock file beside it)."""
    root = spec.dir.parent
    manifest = root / "Cargo.toml"
    workspace = tomllib.loads(manifest.read_text()).get("workspace") if \
        manifest.is_file() else None
    if workspace is None:
        return {spec.dir.name: spec.dir}
    members = workspace.get("members", [])
    if spec.dir.name not in members or any("/" in m or "*" in m for m in members):
        raise EnvError(f"{spec.label}: a --dep needs the Cargo workspace at {root} to list "
                       f"its members by folder name, {spec.dir.name} among them")
    return {"Cargo.toml": manifest, "Cargo.lock": root / "Cargo.lock",
            **{m: root / m for m in members}}


def _seed_cargo_target(spec: ServerSpec, where: Location, log_path: Path) -> None:
    """The copy's target folder starts as a copy of the main build's (the manifest's
    `--target-dir`, with its mtimes: cargo's freshness is by mtime), so that cargo
    rebuilds the bumped crate, what depends on it and the workspace's crates (at a new
    path), not every crate: minutes instead of a cold build. Without a main build yet
    (or no --target-dir), the copy's build is cold."""
    build = list(spec.build)
    if "--target-dir" not in build or build.index("--target-dir") + 1 >= len(build):
        return
    target = build[build.index("--target-dir") + 1]
    source = Path(target.replace("{cache_dir}", str(CACHE_DIR)))
    profile = "release" if "--release" in build else "debug"
    if not (source / profile).is_dir():
        return
    dest = Path(target.replace("{cache_dir}", where.cache_dir)) / profile
    dest.parent.mkdir(parents=True, exist_ok=True)
    _run_local(["cp", "-a", "--reflink=auto", str(source / profile), str(dest)],
               Path(where.env_root), dict(os.environ), log_path,
               f"copy of the main build's {source / profile}")


def _run_local(argv, cwd: Path, env: dict, log_path: Path, what: str) -> None:
    from bench.infra.host import LOCAL
    _run(LOCAL, argv, log_path, what, cwd=str(cwd), env=env)


def installed(spec: ServerSpec, host: Host) -> dict | None:
    """{distribution: version} of a complete Python environment (and "python": its
    interpreter's version), None if it is not made (yet)."""
    where = location(spec, host)
    if not python_kind(spec) or host.remote:
        return None
    path = Path(where.env_root) / "installed.json"
    if not (Path(where.env_root) / MARKER).exists() or not path.exists():
        return None
    return json.loads(path.read_text())


def pinned(spec: ServerSpec) -> dict[str, str]:
    """{canonical name: version} the server's (overridden) requirements pin."""
    return core_deps.python_requirements(_python_key(spec)[1])


# ------------------------------------------------------------------ the cache itself
def _environments(root: Path) -> list[Path]:
    return [env for env in sorted(root.glob("*")) if env.is_dir()] if root.is_dir() else []


def _days_unused(env: Path) -> float:
    used = env / LAST_USED
    stamp = used.stat().st_mtime if used.exists() else env.stat().st_mtime
    return round((time.time() - stamp) / 86400, 1)


def listing(root: Path = CACHE_DIR / "envs") -> list[dict]:
    """Every environment here: name, server, size in bytes, seconds it took, days since
    last used, complete or not."""
    out = []
    for env in _environments(root):
        marker = env / MARKER
        info = json.loads(marker.read_text()) if marker.exists() else {}
        size = sum(f.lstat().st_size for f in env.rglob("*") if not f.is_symlink())
        out.append({"name": env.name, "server": info.get("server"), "bytes": size,
                    "seconds": info.get("seconds"), "complete": marker.exists(),
                    "days_unused": _days_unused(env)})
    return out


def prune(days: float = PRUNE_AFTER_DAYS, root: Path = CACHE_DIR / "envs") -> list[str]:
    """Remove the environments unused for `days`; their names. Reads only each one's
    last use (a run prunes after making an environment: no walk of every file)."""
    gone = []
    for env in _environments(root):
        if _days_unused(env) >= days:
            shutil.rmtree(env, ignore_errors=True)
            gone.append(env.name)
    return gone


# ------------------------------------------------------------------ host file helpers
def _exists(host: Host, path: str) -> bool:
    if not host.remote:
        return Path(path).exists()
    return host.run(["test", "-e", path], timeout=60).returncode == 0


def _touch(host: Host, path: str) -> None:
    if not host.remote:
        Path(path).touch()
    else:
        host.run(["touch", path], timeout=60)


def _remove(host: Host, path: str) -> None:
    if not host.remote:
        shutil.rmtree(path, ignore_errors=True)
    else:
        host.run(["rm", "-rf", path], timeout=300)


def _write(host: Host, path: str, text: str) -> None:
    if not host.remote:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
        return
    import tempfile
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(text)
    try:
        host.put(f.name, path)
    finally:
        os.unlink(f.name)
