"""servers/_jscommon/npm_ci_once.sh, the Node.js servers' build: real npm ci on a package
with no dependencies (nothing to download), skipped only while node_modules is what the
same lock file, Node.js, npm and arguments made."""
from __future__ import annotations

import json
import subprocess

from bench.paths import REPO

SCRIPT = REPO / "servers" / "_jscommon" / "npm_ci_once.sh"
SKIPPED = "node_modules is up to date"
ARGS = ["--omit=dev", "--no-audit", "--no-fund"]


def package(folder, version: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "package.json").write_text(json.dumps({"name": "p", "version": version}))
    (folder / "package-lock.json").write_text(json.dumps({
        "name": "p", "version": version, "lockfileVersion": 3, "requires": True,
        "packages": {"": {"name": "p", "version": version}}}))


def build(folder) -> str:
    done = subprocess.run(["sh", str(SCRIPT), *ARGS], cwd=folder, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_npm_ci_runs_once_per_lock_and_again_when_anything_it_depends_on_differs(tmp_path):
    package(tmp_path, "1.0.0")
    assert SKIPPED not in build(tmp_path)         # no node_modules yet: npm ci
    stamp = tmp_path / "node_modules" / ".webbench-npm-ci"
    assert stamp.read_text().startswith("lock ")
    assert SKIPPED in build(tmp_path)
    package(tmp_path, "1.0.1")                          # another lock file
    assert SKIPPED not in build(tmp_path)
    stamp.write_text(stamp.read_text().replace("npm ", "npm 0.0.0-other "))   # another npm
    assert SKIPPED not in build(tmp_path)
    assert SKIPPED in build(tmp_path)
    stamp.unlink()                                      # a node_modules it did not make
    assert SKIPPED not in build(tmp_path)
