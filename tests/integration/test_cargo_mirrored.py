"""servers/_rscommon/cargo_mirrored.sh, how the Rust servers run cargo: on a mirror of the
workspace whose unchanged files keep their mtimes (cargo's freshness), with real cargo on
a two-crate workspace (`cargo metadata`: nothing to compile or download)."""
from __future__ import annotations

import os
import subprocess

from bench.paths import REPO

SCRIPT = REPO / "servers" / "_rscommon" / "cargo_mirrored.sh"


def crate(root, name: str, dependency: str | None = None) -> None:
    (root / name / "src").mkdir(parents=True)
    deps = f'[dependencies]\n{dependency} = {{ path = "../{dependency}" }}\n' if dependency else ""
    (root / name / "Cargo.toml").write_text(
        f'[package]\nname = "{name}"\nversion = "0.1.0"\nedition = "2021"\n{deps}')
    (root / name / "src" / "lib.rs").write_text("pub fn f() {}\n")


def workspace(root) -> None:
    root.mkdir()
    (root / "Cargo.toml").write_text('[workspace]\nresolver = "2"\nmembers = ["common", "server"]\n')
    (root / "Cargo.lock").write_text("version = 3\n")
    crate(root, "common")
    crate(root, "server", "common")
    (root / "notrust").mkdir()            # a sibling without Cargo.toml: not mirrored
    (root / "notrust" / "x.py").write_text("")


def cargo(root, mirror, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", str(SCRIPT), str(mirror), *args], cwd=root / "server",
                          capture_output=True, text=True, timeout=120)


def test_the_mirror_copies_what_differs_keeps_what_does_not_and_removes_what_is_gone(tmp_path):
    root, mirror = tmp_path / "checkout", tmp_path / "cache" / "cargo-src"
    workspace(root)
    done = cargo(root, mirror, "metadata", "--format-version", "1", "--no-deps")
    assert done.returncode == 0, done.stderr
    assert '"name":"server"' in done.stdout and str(mirror / "server") in done.stdout
    assert sorted(p.name for p in mirror.iterdir() if p.is_dir()) == ["common", "server"]
    kept, changed = mirror / "common" / "src" / "lib.rs", mirror / "server" / "src" / "lib.rs"
    for path in (kept, changed):
        os.utime(path, (1_000_000, 1_000_000))
    # a new clone: every file rewritten (new mtimes), one file's bytes changed, one gone
    (root / "common" / "src" / "lib.rs").write_text("pub fn f() {}\n")
    (root / "server" / "src" / "lib.rs").write_text("pub fn g() {}\n")
    (root / "common" / "src" / "old.rs").write_text("")
    assert cargo(root, mirror, "metadata", "--no-deps", "--format-version", "1").returncode == 0
    assert (mirror / "common" / "src" / "old.rs").exists()
    (root / "common" / "src" / "old.rs").unlink()
    (root / "Cargo.toml").write_text('[workspace]\nresolver = "2"\nmembers = ["server", "common"]\n')
    assert cargo(root, mirror, "metadata", "--no-deps", "--format-version", "1").returncode == 0
    assert kept.stat().st_mtime == 1_000_000              # same bytes: cargo sees it fresh
    assert changed.read_text() == "pub fn g() {}\n" and changed.stat().st_mtime > 1_000_000
    assert not (mirror / "common" / "src" / "old.rs").exists()
    assert (mirror / "Cargo.toml").read_text() == (root / "Cargo.toml").read_text()
    # a member the workspace dropped leaves the mirror
    (root / "common" / "Cargo.toml").unlink()
    (root / "server" / "Cargo.toml").write_text(
        '[package]\nname = "server"\nversion = "0.1.0"\nedition = "2021"\n')
    (root / "Cargo.toml").write_text('[workspace]\nresolver = "2"\nmembers = ["server"]\n')
    assert cargo(root, mirror, "metadata", "--no-deps", "--format-version", "1").returncode == 0
    assert not (mirror / "common").exists()


def test_a_folder_it_did_not_make_or_a_shallow_path_is_refused_and_left_alone(tmp_path):
    root = tmp_path / "checkout"
    workspace(root)
    foreign = tmp_path / "someone" / "else"
    foreign.mkdir(parents=True)
    (foreign / "keep.txt").write_text("mine")
    done = cargo(root, foreign, "metadata")
    assert done.returncode == 2 and "not a mirror this script made" in done.stderr
    assert [p.name for p in foreign.iterdir()] == ["keep.txt"]
    for shallow in ("", "/", "/tmp", "relative/path"):
        done = cargo(root, shallow, "metadata")
        assert done.returncode == 2 and "absolute path two folders deep" in done.stderr
