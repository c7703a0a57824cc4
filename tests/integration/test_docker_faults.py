"""Docker mode's faults at the provider: an image build that fails and a port already
taken. Each ends in a ProvisionError that says what happened, and nothing of the compose
project is left (containers, networks, volumes). The faults of a whole run (a container
killed, Ctrl-C and SIGKILL during `compose up`, an engine that stops) are
tests/e2e/test_docker_faults.py's.

A real engine and a real build (the suite's engine: scripts/docker_engine.sh)."""
from __future__ import annotations

import os
import socket
import subprocess

import pytest

from bench.infra import databases, state
from bench.infra.containers import images
from tests.conftest import DOCKER, needs_docker

pytestmark = [pytest.mark.integration, pytest.mark.full, DOCKER, needs_docker()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def project_leftovers(project: str) -> list[str]:
    """The project's containers, networks and volumes the engine still has."""
    label = f"label=com.docker.compose.project={project}"
    found = []
    for kind in (["ps", "-a"], ["network", "ls"], ["volume", "ls"]):
        done = subprocess.run(["docker", *kind, "--quiet", "--filter", label],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        found += [f"{kind[0]} {line}" for line in done.stdout.split()]
    return found


@pytest.fixture
def recorded_state(tmp_path):
    """A harness state of its own (what the provider records before `compose up`)."""
    active = state.activate(tmp_path / "state")
    yield active
    state.deactivate()


def test_an_image_build_that_fails_says_why_and_starts_nothing(monkeypatch, recorded_state,
                                                               tmp_path):
    folder = tmp_path / "images" / "broken"
    folder.mkdir(parents=True)
    (folder / "Dockerfile").write_text("ARG BASE\nFROM ${BASE}\n"
                                       "RUN echo 'the recipe is broken' >&2 && exit 3\n")
    monkeypatch.setattr(images, "IMAGES_DIR", tmp_path / "images")
    monkeypatch.setitem(images.LOCAL_FOLDERS, "postgres", "broken")
    monkeypatch.setitem(images.LOCAL_NAMES, "postgres", "webbench-test/broken:1")
    project = f"webbench-test-build-{os.getpid()}"
    prov = databases.DockerProvider(["postgres"], {"postgres": free_port()},
                                    image_source="local", project=project)
    with pytest.raises(databases.ProvisionError) as failed:
        prov.start()
    said = str(failed.value)
    assert "building webbench-test/broken:1 failed (exit" in said, said
    assert "the recipe is broken" in said, said
    assert prov.stop() == []
    assert not images.present("webbench-test/broken:1")
    assert project_leftovers(project) == []
    assert recorded_state.data["projects"] == {}       # `up` never ran: nothing recorded


def test_a_port_already_taken_is_refused_before_anything_starts(recorded_state):
    project = f"webbench-test-port-{os.getpid()}"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        prov = databases.DockerProvider(["postgres"], {"postgres": port},
                                        image_source="local", project=project)
        with pytest.raises(databases.ProvisionError) as failed:
            prov.start()
    said = str(failed.value)
    assert f"port {port} (for the postgres container) is busy" in said, said
    assert prov.stop() == []
    assert project_leftovers(project) == []
