"""bench.infra.containers without an engine: a container's cgroup read from a /proc and
/sys/fs/cgroup laid out on disk, compose v2 told from v1, the local images' recipe, and a
dead harness's compose project removed by the reaper."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from bench.infra import state
from bench.infra.containers import cgroup, engine, images
from bench.infra.seam import Completed

CONTAINER = "9f5afe09d822"


def proc_with(tmp_path: Path, pid: int, lines: list[str]) -> Path:
    proc = tmp_path / "proc"
    (proc / str(pid)).mkdir(parents=True)
    (proc / str(pid) / "cgroup").write_text("\n".join(lines) + "\n")
    return proc


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_a_containers_processes_are_the_pids_of_its_cgroup(tmp_path, layout):
    root = tmp_path / "cgroup"
    if layout == "v1":      # docker 20.10 with cgroupfs, as on this machine
        lines = [f"9:name=systemd:/docker/{CONTAINER}", f"8:pids:/docker/{CONTAINER}",
                 f"5:devices:/docker/{CONTAINER}", "0::/"]
        folder = root / "pids" / "docker" / CONTAINER
    else:                   # the unified hierarchy, systemd's driver
        lines = [f"0::/system.slice/docker-{CONTAINER}.scope"]
        folder = root / "system.slice" / f"docker-{CONTAINER}.scope"
    folder.mkdir(parents=True)
    (folder / "cgroup.procs").write_text("15960\n16174\n16175\n")
    proc = proc_with(tmp_path, 15960, lines)
    assert cgroup.cgroup_folder(15960, root, proc) == folder
    assert cgroup.pids_in(folder) == [15960, 16174, 16175]
    assert cgroup.cgroup_folder(4242, root, proc) is None      # gone: no figures, no error


class Versions:
    """LOCAL.run for `<compose> version --short`: what each command answers."""

    def __init__(self, answers: dict[str, str | None]):
        self.answers = answers

    def __call__(self, argv, timeout, env=None, **kw):
        said = self.answers.get(" ".join(argv[:-2]))
        return Completed(argv, 0 if said else 1, said or "", "" if said else "unknown", 0, 0)


def test_compose_v2_is_found_and_v1_is_named_too_old(monkeypatch, tmp_path):
    monkeypatch.setattr(engine, "TOOLS", tmp_path)
    which = {"docker": "/usr/bin/docker", "docker-compose": "/usr/bin/docker-compose"}
    monkeypatch.setattr(engine.LOCAL, "which", lambda tool: which.get(tool))
    monkeypatch.setattr(engine.LOCAL, "run", Versions({"docker compose": None,
                                                       "/usr/bin/docker-compose": "1.29.2"}))
    with pytest.raises(engine.ComposeMissing) as refused:
        engine.find_compose()
    assert "version 1.29.2, older than 2.20" in str(refused.value)
    assert "install_docker-compose.sh" in str(refused.value)
    (tmp_path / "docker-compose").write_text("")
    monkeypatch.setattr(engine.LOCAL, "run", Versions({
        "docker compose": None, str(tmp_path / "docker-compose"): "2.40.3",
        "/usr/bin/docker-compose": "1.29.2"}))
    assert engine.find_compose() == engine.Compose((str(tmp_path / "docker-compose"),),
                                                   "2.40.3")
    monkeypatch.setattr(engine.LOCAL, "run", Versions({"docker compose": "v2.29.1"}))
    assert engine.find_compose().command == ("docker", "compose")


def test_an_installed_engine_that_does_not_answer_says_how_to_start_it(monkeypatch):
    monkeypatch.setattr(engine.LOCAL, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(engine.LOCAL, "run", lambda argv, timeout, env=None, **kw: Completed(
        argv, 1, json.dumps({"Client": {"Version": "28.2.2"}}),
        "Cannot connect to the Docker daemon at unix:///var/run/docker.sock.", 0, 0))
    found = engine.engine_state({})
    assert not found.answers and found.client_version == "28.2.2"
    assert "installed but does not answer" in found.why and "dockerd --iptables=false" in found.why


def test_the_local_images_recipe_follows_their_files_and_the_mirror_skips_comments(
        tmp_path, monkeypatch):
    sources = tmp_path / "debian.sources"
    sources.write_text("Types: deb\n# http://snapshot.debian.org/archive/debian/x\n"
                       "URIs: http://deb.debian.org/debian\nSuites: bookworm\n\n"
                       "URIs: http://deb.debian.org/debian-security\n")
    assert images._mirror(str(sources)) == "http://deb.debian.org/debian"
    folder = tmp_path / "images"
    (folder / "postgres").mkdir(parents=True)
    (folder / "postgres" / "Dockerfile").write_text("FROM x\n")
    monkeypatch.setattr(images, "IMAGES_DIR", folder)
    first = images.recipe("postgres", "bookworm", str(sources))
    assert first == images.recipe("postgres", "bookworm", str(sources))
    assert first != images.recipe("postgres", "trixie", str(sources))
    (folder / "postgres" / "entrypoint.sh").write_text("#!/bin/sh\n")
    assert first != images.recipe("postgres", "bookworm", str(sources))
    assert images.recipe(None, "bookworm", str(sources)) != first


def test_local_images_are_named_apart_from_the_official_ones():
    assert all(name.startswith("webbench-local/") for name in images.LOCAL_NAMES.values())
    assert not set(images.LOCAL_NAMES.values()) & set(images.OFFICIAL.values())
    choice = images.ImageChoice("local", dict(images.LOCAL_NAMES))
    assert choice.compose_files() == [images.LOCAL_OVERLAY]
    assert choice.compose_env()["BENCH_MYSQL_IMAGE"] == "webbench-local/mariadb:debian"
    assert images.ImageChoice("official", dict(images.OFFICIAL)).compose_files() == []


def test_a_dead_harnesss_compose_project_is_removed_by_the_next_one(tmp_path):
    """The reaper runs the recorded `down` (here a stand-in that leaves a mark)."""
    mark = tmp_path / "down-ran"
    dead = {"harness_pid": 2 ** 22 + 7, "harness_started": 1.0, "run_dir": None,
            "groups": {}, "paths": [],
            "projects": {"webbench-4242": {
                "down": [sys.executable, "-c",
                         "import os, pathlib; pathlib.Path(os.environ['MARK']).write_text("
                         "os.environ['COMPOSE_PROJECT_NAME'])"],
                "env": {"MARK": str(mark), "COMPOSE_PROJECT_NAME": "webbench-4242"}}}}
    (tmp_path / "4194311.json").write_text(json.dumps(dead))
    said = state.reap(tmp_path)
    assert mark.read_text() == "webbench-4242"
    assert said and "removed compose project webbench-4242" in said[0]
    assert not (tmp_path / "4194311.json").exists()


def test_a_live_harness_records_and_forgets_its_project(tmp_path):
    record = state.RunState(tmp_path)
    record.project_started("webbench-1", ["docker", "compose", "down"], {"DOCKER_HOST": "x"})
    assert json.loads(record.path.read_text())["projects"]["webbench-1"]["env"] == \
        {"DOCKER_HOST": "x"}
    record.project_removed("webbench-1")
    assert json.loads(record.path.read_text())["projects"] == {}
    assert os.getpid() == json.loads(record.path.read_text())["harness_pid"]


def test_a_database_in_a_container_is_never_moved_out_of_its_cgroups():
    """Docker mode: the database's processes stay in the cgroups the engine made (moving
    them would take them out of the container's limits); it is read from /proc, saying
    why, while the other roles get their cgroups as before."""
    import os
    from bench.infra.cgroups import PROCFS, RoleCgroups
    from bench.infra.databases.docker import DockerProvider
    from bench.infra.fake import FakeHost
    host = FakeHost()
    cgroups = RoleCgroups({"server": host, "database": host},
                          left_alone={"database": DockerProvider.cgroups_kept}).open()
    cgroups.place("database", [os.getpid()])
    assert "database" not in cgroups.paths
    assert cgroups.accounting("database") == PROCFS
    assert cgroups.why_not["database"] == DockerProvider.cgroups_kept
    placed = [args for op, args in host.calls if op == "cgroup_place"]
    assert placed == []
    opened = [args for op, args in host.calls if op == "cgroup_open"]
    assert [a["roles"] for a in opened] == [["server"]]


def test_a_project_the_engine_could_not_remove_stays_on_record_until_it_can(tmp_path):
    """An engine that stopped answering: the harness exits with its project on record
    (the file stays, its run no longer named), and each later reaper tries again until
    `down` succeeds."""
    record = state.RunState(tmp_path)
    record.run_dir(tmp_path / "run")
    record.project_started("webbench-5", [sys.executable, "-c", "raise SystemExit(1)"], {})
    record.close()
    kept = json.loads(record.path.read_text())
    assert kept["projects"] and kept["run_dir"] is None
    kept["harness_pid"] = 2 ** 22 + 9                     # the harness has exited
    record.path.write_text(json.dumps(kept))
    said = state.reap(tmp_path)
    assert "could not remove compose project webbench-5 (tried again" in said[0]
    assert json.loads(record.path.read_text())["projects"]       # still on record
    kept = json.loads(record.path.read_text())
    kept["projects"]["webbench-5"]["down"] = [sys.executable, "-c", "pass"]   # engine back
    record.path.write_text(json.dumps(kept))
    assert "removed compose project webbench-5" in state.reap(tmp_path)[0]
    assert not record.path.exists()
