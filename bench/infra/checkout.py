"""The two versions of the project an A/B run (`ab`) measures: a git ref checked out in a
worktree of its own, or a folder taken as it is; and which servers differ between them.

Only the servers come from a version: the harness that measures them, its load
generators and its databases are this checkout's, so both versions are measured by the
same code. Each version's builds go to a cache folder of its own, because two builds of
one server in one cache would overwrite each other's binaries.
"""
from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from bench.core.manifest import ServerSpec
from bench.infra.environment import git_state
from bench.paths import CACHE_DIR, REPO

AB_CACHE = CACHE_DIR / "ab"
# build outputs and caches inside a server folder, not its code
NOT_CODE = {"target", "node_modules", "__pycache__", ".pytest_cache", ".mypy_cache"}


class CheckoutError(ValueError):
    """Neither a folder nor a git ref, or a worktree git could not make."""


@dataclass(frozen=True)
class Version:
    arm: str                   # "A" (baseline) or "B" (candidate)
    given: str                 # as the user wrote it
    root: Path                 # the project root the servers are taken from
    commit: str | None         # the ref's commit, or the folder's HEAD if it is a checkout
    dirty: bool | None         # the folder has uncommitted changes (None: not a checkout)
    worktree: bool             # made for this run (removed after it)
    cache_dir: Path            # where this version's builds go

    def public(self) -> dict:
        return {"given": self.given, "root": str(self.root), "commit": self.commit,
                "dirty": self.dirty, "worktree": self.worktree,
                "cache_dir": str(self.cache_dir)}


def _git(*args: str, cwd: Path = REPO, check: bool = True) -> str | None:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    if done.returncode != 0:
        if check:
            raise CheckoutError(f"git {' '.join(args)} failed: {done.stderr.strip()[:300]}")
        return None
    return done.stdout.strip()


def resolve(given: str, arm: str, repo: Path = REPO, cache: Path = AB_CACHE) -> Version:
    """A folder holding a `servers/` folder is taken as it is (uncommitted changes
    included); otherwise `given` must name a commit of `repo`, which is checked out
    (detached) into a worktree under `cache`."""
    folder = Path(given).expanduser()
    if folder.is_dir():
        root = folder.resolve()
        if not (root / "servers").is_dir():
            raise CheckoutError(f"{given}: a folder given to ab must be a checkout of this "
                                f"project (it has no servers/ folder)")
        state = git_state(folder=str(root))
        commit = state["commit"]
        dirty = None if commit is None else state["dirty"]
        # this very checkout shares the regular build cache; any other folder gets its own
        builds = CACHE_DIR if root == repo.resolve() else \
            cache / "builds" / f"dir-{hashlib.sha256(str(root).encode()).hexdigest()[:12]}"
        return Version(arm, given, root, commit, dirty, False, builds)
    commit = _git("rev-parse", "--verify", "--quiet", f"{given}^{{commit}}", cwd=repo,
                  check=False)
    if not commit:
        raise CheckoutError(f"{given!r} is neither a folder nor a git ref of {repo}")
    path = cache / "checkouts" / f"{commit[:12]}-{arm}"
    if path.exists():
        _git("worktree", "remove", "--force", str(path), cwd=repo, check=False)
        shutil.rmtree(path, ignore_errors=True)
    _git("worktree", "prune", cwd=repo, check=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    _git("worktree", "add", "--detach", "--force", str(path), commit, cwd=repo)
    return Version(arm, given, path, commit, False, True, cache / "builds" / commit[:12])


def remove(version: Version, repo: Path = REPO) -> None:
    """Remove a worktree made for the run (its builds stay in the cache for next time)."""
    if version.worktree:
        _git("worktree", "remove", "--force", str(version.root), cwd=repo, check=False)
        shutil.rmtree(version.root, ignore_errors=True)


def servers_dirs(version: Version, dirs: tuple[Path, ...], repo: Path = REPO) -> list[Path]:
    """The version's own copy of each servers folder: a folder inside this checkout is
    taken at the same place in the version; one outside it is the same for both."""
    out = []
    for d in dirs:
        try:
            out.append(version.root / Path(d).resolve().relative_to(repo.resolve()))
        except ValueError:
            out.append(Path(d))
    return out


def _files(folder: Path):
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not NOT_CODE.intersection(path.relative_to(folder).parts):
            yield path


def tree_hash(path: Path) -> str:
    """A hash of a file's or folder's code (names and contents; build outputs left out)."""
    h = hashlib.sha256()
    for f in ([path] if path.is_file() else _files(path)):
        h.update(f.name.encode() if f == path else str(f.relative_to(path)).encode())
        h.update(b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def shared_code(spec: ServerSpec) -> list[Path]:
    """What of its servers folder a server uses besides its own folder: every sibling
    entry its files name as a path ("../_pycommon" in a go.mod, Cargo.toml or require(),
    "{servers_dir}/django" in a manifest; prose naming "servers/X" does not count), and
    what those entries name in turn (actix-web's _rsactix uses
    _rscommon); for a Cargo workspace member, the workspace's Cargo.toml and Cargo.lock."""
    root = spec.dir.parent
    siblings = {p.name: p for p in root.iterdir() if p.name != spec.dir.name}
    used: set[str] = set()
    to_read = [spec.dir]
    while to_read:
        for name in _named_siblings(to_read.pop(), siblings) - used:
            used.add(name)
            # shared code is read in turn; another server's folder (django_asgi runs
            # django's project) is used as it is, not what it names
            if siblings[name].is_dir() and not (siblings[name] / "manifest.toml").exists():
                to_read.append(siblings[name])
    if (spec.dir / "Cargo.toml").exists():
        used |= {n for n in ("Cargo.toml", "Cargo.lock") if n in siblings}
    return [siblings[n] for n in sorted(used)]


def _named_siblings(folder: Path, siblings: dict[str, Path]) -> set[str]:
    named = set()
    for f in _files(folder):
        try:
            text = f.read_text(errors="ignore")
        except OSError:
            continue
        for name in siblings:
            if re.search(r"(\.\./|servers_dir\}/)" + re.escape(name) + r"\b", text):
                named.add(name)
    return named


def code_hash(spec: ServerSpec) -> str:
    """The server's folder and the shared code it uses, as one hash."""
    h = hashlib.sha256(tree_hash(spec.dir).encode())
    for path in shared_code(spec):
        h.update(path.name.encode() + tree_hash(path).encode())
    return h.hexdigest()


def changed_servers(baseline: dict[str, ServerSpec],
                    candidate: dict[str, ServerSpec]) -> dict[str, str]:
    """Server id -> how it differs between the versions, for servers in both whose code
    (own folder or shared code it uses) differs. Servers in only one version cannot be
    compared and are left to the caller."""
    return {sid: "its code differs" for sid in sorted(set(baseline) & set(candidate))
            if code_hash(baseline[sid]) != code_hash(candidate[sid])}
