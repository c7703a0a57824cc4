"""Faults of a `--db-mode docker` run, end to end: a database container killed while a
sample is measured, Ctrl-C and SIGKILL of the harness during `docker compose up`, and the
Docker engine stopping under a run. Each ends with a clear message, the results so far
kept, and nothing of the run's compose project left (its containers, network, volumes).

Real engine, images, databases, gin and wrk (the images are `make test-all`'s, built by
`run_bench.py images` before the tests; else the first run here builds them). One
test stops the engine (only the one the suite started), so every Docker test is in one
xdist group: one worker runs them one after another."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from bench.infra.containers import engine
from bench.paths import REPO
from tests.conftest import DOCKER, needs_docker
from tests.e2e.test_faults import Harness, nothing_left, stored
from tests.e2e.test_run_bench import PORTS, load_running, run_bench
from tests.integration.test_docker_faults import project_leftovers

pytestmark = [pytest.mark.e2e, pytest.mark.full, DOCKER, needs_docker()]

ENGINE_SCRIPT = REPO / "scripts" / "docker_engine.sh"
ENGINE_PIDFILE = engine.CACHE_DIR / "dockerd.pid"
COMPOSE_UP_S = 600            # up, the images possibly built first (cold: about 3 minutes)


# the e2e tests' ports, with docker mode in place of their local one
DOCKER_PORTS = [*PORTS[:PORTS.index("--db-mode")], "--db-mode", "docker",
                *PORTS[PORTS.index("--db-mode") + 2:]]


def docker_run(tmp_path, *extra: str) -> Harness:
    return Harness("--servers", "gin", "--tests", "get_user", "--databases", "postgres",
                   "--orm", "raw", "--no-ceiling", "--results-dir", str(tmp_path), *extra,
                   ports=DOCKER_PORTS)


def project_of(run: Harness) -> str:
    return f"webbench-{run.proc.pid}"


def container(project: str, service: str) -> str | None:
    done = subprocess.run(["docker", "ps", "--all", "--quiet", "--filter",
                           f"label=com.docker.compose.project={project}", "--filter",
                           f"label=com.docker.compose.service={service}"],
                          capture_output=True, text=True, timeout=60)
    return done.stdout.split()[0] if done.stdout.split() else None


def wait_for_container(run: Harness, project: str, timeout: float = COMPOSE_UP_S) -> str:
    """The project's postgres container, once `compose up` has created it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and run.proc.poll() is None:
        if (found := container(project, "postgres")) is not None:
            return found
        time.sleep(0.1)
    run.proc.kill()
    pytest.fail(f"no container of {project} appeared; output:\n{run.output[-3000:]}")


def test_a_container_killed_mid_run_fails_its_sample_and_a_fresh_one_serves_the_next(
        tmp_path):
    run = docker_run(tmp_path, "--repeat", "2", "--duration", "3", "--warmup", "0")
    run.wait_for("[1/2] gin/postgres/raw/get_user@c64 round 1: measure", COMPOSE_UP_S)
    assert load_running(alive=lambda: run.proc.poll() is None), run.output[-3000:]
    victim = container(project_of(run), "postgres")
    if victim is None:
        run.proc.kill()
        pytest.fail(f"no container of {project_of(run)}; output:\n{run.output[-3000:]}")
    killed = subprocess.run(["docker", "kill", victim], capture_output=True, text=True,
                            timeout=60)
    assert killed.returncode == 0, killed.stderr
    assert run.finish(timeout=COMPOSE_UP_S) == 1, run.output[-3000:]
    doc = stored(tmp_path)
    assert doc["status"] == "complete"
    first, after = doc["cases"][0]["samples"]
    assert first["status"] in ("failed", "invalid")
    assert first["reason"].startswith("the postgres database died during this sample"), first
    assert after["status"] == "ok", after["reason"]     # on the recreated container
    assert len(doc["databases"]["postgres"]["restarts"]) == 1
    assert doc["databases"]["postgres"]["image"]["name"]
    assert project_leftovers(project_of(run)) == []
    nothing_left()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_the_harness_stopped_during_compose_up_leaves_no_container(tmp_path, sig):
    run = docker_run(tmp_path, "--repeat", "1", "--duration", "1", "--warmup", "0")
    run.wait_for("databases (docker): starting", COMPOSE_UP_S)
    project = project_of(run)
    wait_for_container(run, project)          # `up` has begun: created, maybe not started
    run.proc.send_signal(sig)
    code = run.finish(timeout=300)
    if sig == signal.SIGINT:
        assert code == 130, run.output[-3000:]
        assert "interrupted" in run.output
        assert stored(tmp_path)["status"] == "interrupted"
    else:
        assert project_leftovers(project), "nothing was running when the harness was killed"
        out = run_bench("verify", "--servers", "nope", *PORTS)
        # another test worker's harness may be the next invocation and clean up first
        if "cleaned up after a harness that died" in out.stderr:
            assert f"removed compose project {project}" in out.stderr, out.stderr
    assert project_leftovers(project) == []
    nothing_left()


def engine_script(action: str) -> None:
    done = subprocess.run(["bash", str(ENGINE_SCRIPT), action], capture_output=True,
                          text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_engine_that_stops_under_a_run_ends_it_clearly_and_its_containers_are_reaped(
        tmp_path):
    """The engine stops while a sample is measured (its containers die with it): that
    sample fails, the restart before the next says the engine does not answer and how to
    start it, the run ends failed with its samples kept, and the containers it could not
    remove are removed by the next invocation once the engine is back. Only the engine
    this suite started is stopped, never a machine's own."""
    if not ENGINE_PIDFILE.exists():
        pytest.fail("this test stops the engine scripts/docker_engine.sh started, and none "
                    "did (`make test-all` starts one); a machine's own engine is not a "
                    "test's to stop")
    run = docker_run(tmp_path, "--repeat", "2", "--duration", "3", "--warmup", "0")
    run.wait_for("[1/2] gin/postgres/raw/get_user@c64 round 1: measure", COMPOSE_UP_S)
    assert load_running(alive=lambda: run.proc.poll() is None), run.output[-3000:]
    project = project_of(run)
    try:
        engine_script("stop")
        assert run.finish(timeout=300) == 1, run.output[-3000:]
    finally:
        engine_script("start")
    assert "the Docker engine is installed but does not answer" in run.output, run.output[-3000:]
    doc = stored(tmp_path)
    assert doc["status"] == "failed" and "does not answer" in doc["reason"], doc["reason"]
    assert doc["cases"][0]["samples"][0]["status"] in ("failed", "invalid")
    assert any("removes them once the engine answers" in p
               for p in doc.get("cleanup_problems") or []), doc.get("cleanup_problems")
    out = run_bench("verify", "--servers", "nope", *PORTS)
    if "cleaned up after a harness that died" in out.stderr:
        assert f"removed compose project {project}" in out.stderr, out.stderr
    assert project_leftovers(project) == []
    nothing_left()


def test_an_engine_that_does_not_answer_is_named_before_anything_starts(tmp_path):
    """The preflight asks the engine (here: DOCKER_HOST at a socket nobody serves) and
    stops the run before a database, build or server starts."""
    done = subprocess.run(
        [sys.executable, "run_bench.py", "--servers", "gin", "--tests", "get_user",
         "--databases", "postgres", "--results-dir", str(tmp_path), *DOCKER_PORTS],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env={**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/nobody.sock"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error: --db-mode docker: the Docker engine at DOCKER_HOST does not answer" \
        in done.stderr, done.stderr
    assert "databases (docker): starting" not in done.stdout
