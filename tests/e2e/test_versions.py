"""Versions end to end: a release sweep (--dep) of a fixture server whose own
requirements.txt pins one small package, each release in a virtualenv of its own, the
versions stored per release and the table across them; a release pip cannot install
fails its cases with pip's reason while the others are measured."""
from __future__ import annotations

import pytest

from tests.e2e.test_run_bench import PORTS, only_run, run_bench
from tests.integration.test_envs import pinned_server  # noqa: F401 - the fixture

# full: make test-all; the everyday tier's tests run its lines of bench/ (docs/testing.md)
pytestmark = [pytest.mark.e2e, pytest.mark.full]


def test_a_release_sweep_measures_each_release_with_its_own_packages(pinned_server, tmp_path):
    servers_dir = pinned_server.dir.parent
    out = run_bench("--servers", "pinned", "--servers-dir", str(servers_dir),
                    "--dep", "six=1.15.0,1.16.0,0.0.404", "--tests", "plain", "--no-ceiling",
                    "--repeat", "1", "--duration", "1", "--warmup", "0",
                    "--results-dir", str(tmp_path / "r"), *PORTS)
    assert out.returncode == 1, out.stdout[-3000:] + out.stderr[-3000:]   # one release failed
    doc = only_run(tmp_path / "r")
    status = {c["server"]: c["status"] for c in doc["cases"]}
    assert status == {"pinned@six=1.15.0": "ok", "pinned@six=1.16.0": "ok",
                      "pinned@six=0.0.404": "failed"}
    for release in ("1.15.0", "1.16.0"):
        assert doc["servers"][f"pinned@six={release}"]["versions"]["six"] == release
    broken = next(c for c in doc["cases"] if c["server"] == "pinned@six=0.0.404")
    assert "pip install of pinned@six=0.0.404's requirements failed" in broken["reason"]
    assert doc["settings"]["deps"] == ["six=1.15.0,1.16.0,0.0.404"]
    assert "## pinned across six releases: plain" in out.stdout
    table = out.stdout[out.stdout.index("## pinned across six releases: plain"):]
    assert "| six 1.15.0 " in table and "| 0.0.404 vs 1.15.0 " in table
    assert "| failed: " in table               # the release that did not build says why
