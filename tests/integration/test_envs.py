"""A server's own environment (bench.infra.envs) made for real: a virtualenv by pip from
PyPI, a copy of a Go module resolved by `go mod tidy` from the Go module proxy, of a
Node.js package by npm, of a Rust workspace by `cargo update --precise` from crates.io. The
fixture server is the stdlib tunable_cost one with a requirements.txt of one small
package, so that pip's work is seconds."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
from pathlib import Path

import psutil
import pytest

from bench.core import manifest
from bench.core.plan import Variant
from bench.core.settings import Settings
from bench.infra import envs
from bench.infra.host import LOCAL
from bench.infra.lifecycle import running_server
from bench.infra.server import ServerError, build, template_values
from bench.infra.versions import server_versions
from bench.paths import REPO, SERVERS_DIR
from tests.conftest import TEST_SERVER_PORT

pytestmark = pytest.mark.integration
FIXTURES = REPO / "tests" / "fixtures"
SETTINGS = Settings(port=TEST_SERVER_PORT, workers=2, db_connections=2)


@pytest.fixture
def pinned_server(tmp_path) -> manifest.ServerSpec:
    """tunable_cost with its own requirements.txt (six==1.16.0), in a servers folder of
    this test's own (the start command reaches the fixture's code by absolute path)."""
    folder = tmp_path / "servers" / "pinned"
    folder.mkdir(parents=True)
    text = (FIXTURES / "servers" / "tunable_cost" / "manifest.toml").read_text()
    text = text.replace('id = "tunable_cost"', 'id = "pinned"').replace(
        '"{dir}/../../broken_server/server.py"', f'"{FIXTURES}/broken_server/server.py"')
    (folder / "manifest.toml").write_text(text)
    (folder / "requirements.txt").write_text("# a tiny pure-Python pin\nsix==1.16.0\n")
    return manifest.load_manifest(folder)


def test_a_python_server_runs_from_its_own_virtualenv_made_once(pinned_server, tmp_path):
    log = tmp_path / "build.log"
    build(pinned_server, SETTINGS, log)
    where = envs.location(pinned_server, LOCAL)
    root = Path(where.env_root)
    assert (root / envs.MARKER).exists() and Path(where.python).exists()
    assert json.loads((root / "installed.json").read_text())["six"] == "1.16.0"
    assert server_versions(pinned_server)["six"] == "1.16.0"
    assert build(pinned_server, SETTINGS, log) == 0.0              # cached by content
    with running_server(Variant(pinned_server, "none", False), SETTINGS, None,
                        tmp_path / "server.log") as running:
        assert psutil.Process(running.server.proc.pid).cmdline()[0] == where.python
    # another pin is another environment; the first stays
    older = dataclasses.replace(pinned_server, arm="six=1.15.0", deps={"six": "1.15.0"})
    build(older, SETTINGS, log)
    assert envs.location(older, LOCAL).env_root != where.env_root
    assert server_versions(older)["six"] == "1.15.0" and (root / envs.MARKER).exists()


def test_a_pin_pip_cannot_install_fails_the_build_with_pips_reason_and_leaves_nothing(
        pinned_server, tmp_path):
    broken = dataclasses.replace(pinned_server, arm="six=0.0.404", deps={"six": "0.0.404"})
    with pytest.raises(ServerError, match=r"pip install of pinned@six=0.0.404's requirements "
                                          r"failed \(exit 1\)") as caught:
        build(broken, SETTINGS, tmp_path / "build.log")
    assert "0.0.404" in str(caught.value.reason)
    assert not Path(envs.location(broken, LOCAL).env_root).exists()


def test_a_go_dependency_override_builds_a_copy_that_links_the_asked_version(tmp_path):
    gin = manifest.discover([SERVERS_DIR])["gin"]
    older = dataclasses.replace(gin, arm="gin=v1.11.0", deps={"github.com/gin-gonic/gin": "v1.11.0"})
    build(older, SETTINGS, tmp_path / "build.log")
    where = envs.location(older, LOCAL)
    binary = Path(where.cache_dir) / "gin" / "server"
    linked = subprocess.run(["go", "version", "-m", str(binary)], capture_output=True,
                            text=True, check=True).stdout
    assert "\tgithub.com/gin-gonic/gin\tv1.11.0\t" in linked
    assert server_versions(older)["github.com/gin-gonic/gin"] == "v1.11.0"
    # the server's own folder is untouched: its go.mod still pins its own release
    assert "github.com/gin-gonic/gin v1.12.0" in (gin.dir / "go.mod").read_text()


def test_an_npm_dependency_override_installs_the_asked_version_in_a_copy(tmp_path):
    express = manifest.discover([SERVERS_DIR])["express"]
    older = dataclasses.replace(express, arm="express=5.0.0", deps={"express": "5.0.0"})
    build(older, SETTINGS, tmp_path / "build.log")
    copy = Path(envs.location(older, LOCAL).dir)
    installed = json.loads((copy / "node_modules" / "express" / "package.json").read_text())
    assert installed["version"] == "5.0.0"
    assert server_versions(older)["express"] == "5.0.0"
    assert json.loads((express.dir / "package.json").read_text())["dependencies"]["express"] \
        == "5.3.0"                                       # the server's own folder untouched


@pytest.mark.full      # cargo rebuilds the bumped crate and links the workspace's binaries
def test_a_rust_dependency_override_builds_a_copy_of_the_workspace_with_the_asked_crate(
        tmp_path, monkeypatch):
    # The copy has a target folder of its own, so every crate compiles again: in the
    # production profile (fat LTO, one codegen unit) that took 450-545 s of this tier's
    # wall time, the longest test of make test-all. What is under test is which crate the
    # copy resolves and links, not its code generation, so the copy builds unoptimised, as
    # a user's CARGO_PROFILE_RELEASE_* would (the build command and the check below alike).
    for key, value in (("LTO", "off"), ("CODEGEN_UNITS", "16"), ("OPT_LEVEL", "0")):
        monkeypatch.setenv(f"CARGO_PROFILE_RELEASE_{key}", value)
    axum = manifest.discover([SERVERS_DIR])["axum"]
    lock = (SERVERS_DIR / "Cargo.lock").read_text()
    older = dataclasses.replace(axum, arm="axum=0.8.8", deps={"axum": "0.8.8"})
    log = tmp_path / "build.log"
    build(older, SETTINGS, log)
    where = envs.location(older, LOCAL)
    copy = Path(where.dir)
    # resolved in the copy's lock file, compiled, and the binary the start command runs
    tree = subprocess.run(["cargo", "tree", "--locked", "--offline", "-p", "webbench-axum",
                           "-i", "axum", "--depth", "0"], cwd=copy, capture_output=True,
                          text=True, check=True).stdout
    assert tree.startswith("axum v0.8.8"), tree
    # what the copy's target folder holds for the server's binary, as cargo reports it
    # (the manifest's own build command: every unit fresh, whether this test or an
    # earlier run made the copy)
    command = [manifest.expand(a, template_values(older, SETTINGS, "none")) for a in axum.build]
    report = subprocess.run([*command, "--message-format=json"], cwd=copy, capture_output=True,
                            text=True, check=True).stdout
    artifacts = [json.loads(line) for line in report.splitlines() if line.startswith("{")]
    built = {a["package_id"].rsplit("#", 1)[-1] for a in artifacts
             if a.get("reason") == "compiler-artifact"}
    assert "axum@0.8.8" in built and "axum@0.8.9" not in built, sorted(built)
    binary = next(a["executable"] for a in artifacts if a.get("executable")
                  and a["target"]["name"] == "webbench-axum")
    assert binary == str(Path(where.cache_dir) / "cargo-target" / "release" / "webbench-axum")
    assert server_versions(older)["axum"] == "0.8.8"
    # a release the Cargo.toml requirement ("0.8") excludes is cargo's refusal, named
    newer = dataclasses.replace(axum, arm="axum=0.7.9", deps={"axum": "0.7.9"})
    with pytest.raises(ServerError, match=r"cargo update --package axum --precise 0.7.9"):
        build(newer, SETTINGS, log)
    assert not Path(envs.location(newer, LOCAL).env_root).exists()
    # the workspace itself is untouched: its lock file still pins its own release
    assert (SERVERS_DIR / "Cargo.lock").read_text() == lock


def test_environments_unused_for_long_are_pruned(tmp_path):
    root = tmp_path / "envs"
    for name, age_days in (("python-old", 40), ("python-new", 1)):
        (root / name).mkdir(parents=True)
        (root / name / envs.MARKER).write_text("{}")
        used = root / name / envs.LAST_USED
        used.touch()
        stamp = used.stat().st_mtime - age_days * 86400
        os.utime(used, (stamp, stamp))
    assert envs.prune(30, root) == ["python-old"]
    assert [e["name"] for e in envs.listing(root)] == ["python-new"]
    shutil.rmtree(root)
