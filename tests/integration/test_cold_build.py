"""A cold build (bench.infra.cold) through the harness's own build step: the manifest's
build command runs in a copy of the servers folder without what builds leave there, with
an empty harness cache and every toolchain's cache in the same throwaway folder, which is
gone afterwards, even when the build fails."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.core.manifest import load_manifest
from bench.core.settings import Settings
from bench.infra import cold
from bench.infra.server import ServerError, build
from bench.paths import REPO

pytestmark = pytest.mark.integration


def server(tmp_path: Path, command: str) -> Path:
    """servers/s: a manifest whose build runs `command` (sh), beside leftovers of builds."""
    folder = tmp_path / "servers" / "s"
    (folder / "node_modules" / "pkg").mkdir(parents=True)
    (folder / "target").mkdir()
    (folder / "main.txt").write_text("code")
    (tmp_path / "servers" / "_common").mkdir()
    (tmp_path / "servers" / "_common" / "shared.txt").write_text("shared")
    (folder / "manifest.toml").write_text(
        'id = "s"\nconcurrency = "threads"\ndatabases = []\norm = [false]\n'
        f'build = ["sh", "-c", {command!r}]\nstart = ["x"]\n'
        '[workers]\ncount = "none"\nreason = "r"\n')
    return folder


def test_the_build_runs_on_a_copy_with_every_cache_empty_and_leaves_nothing(tmp_path):
    seen = tmp_path / "seen.txt"
    folder = server(tmp_path, f"(pwd; ls -a; ls ../_common; echo cache={{cache_dir}}; "
                              f"echo in_cache=$(ls -A {{cache_dir}}); env) > {seen}")
    spec = load_manifest(folder)
    log = tmp_path / "build.log"
    seconds = cold.cold_build(spec, lambda s, h: build(s, Settings(), log, host=h), log)
    assert seconds >= 0
    lines = seen.read_text().splitlines()
    root = Path(lines[0]).parents[1]          # <root>/servers/s
    assert root.name.startswith("webbench-cold-s-") and not root.exists()
    assert "main.txt" in lines and "node_modules" not in lines and "target" not in lines
    assert "shared.txt" in lines                                  # the siblings came too
    env = dict(line.split("=", 1) for line in lines if "=" in line)
    assert env["cache"] == str(root / "cache")
    assert env["in_cache"] == "locks"           # the build lock's folder, nothing built
    for name, sub in cold.COLD_ENV.items():
        assert env[name] == str(root / sub), name
    assert "-modcacherw" in env["GOFLAGS"].split()
    assert (folder / "node_modules" / "pkg").is_dir()             # the checkout untouched


def test_a_failed_cold_build_fails_as_the_build_does_and_leaves_nothing(tmp_path):
    seen = tmp_path / "seen.txt"
    spec = load_manifest(server(tmp_path, f"pwd > {seen}; exit 3"))
    log = tmp_path / "build.log"
    with pytest.raises(ServerError, match="exit 3"):
        cold.cold_build(spec, lambda s, h: build(s, Settings(), log, host=h), log)
    assert not Path(seen.read_text().strip()).parents[1].exists()
    assert "a cold build in" in log.read_text()


def test_the_build_command_builds_cold_then_warm_and_says_both(tmp_path):
    seen = tmp_path / "builds.txt"
    server(tmp_path, f"echo {{cache_dir}} >> {seen}")
    done = subprocess.run([sys.executable, str(REPO / "run_bench.py"), "build", "--servers", "s",
                           "--servers-dir", str(tmp_path / "servers"), "--cold-build"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"built s in \d+\.\d s \(from nothing cached: \d+\.\d s\)", done.stdout)
    cold_cache, warm_cache = seen.read_text().split()
    assert "webbench-cold-s-" in cold_cache and not Path(cold_cache).exists()
    assert "webbench-cold" not in warm_cache                 # then the harness's own cache
