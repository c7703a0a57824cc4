"""A whole run, every layer of it real, on a FakeHost with a fake load generator: the
session (hosts, preflight, builds, teardown), the schedule, the server lifecycle through
the Host seam, measuring, judging, recording into schema 3 and the tables. No process is
started and no load is sent, so it takes well under 2 s and shows that the orchestration
reaches processes and load only through its two seams."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import load
from bench.core import manifest
from bench.core.plan import plan
from bench.core.settings import Settings
from bench.infra.fake import FakeHost
from bench.infra.hosts import Hosts
from bench.load import wrk
from bench.load.generator import LoadRequest, LoadResult
from bench.runner import Run
from bench.session import Session
from bench.storage import results

DATA = Path(__file__).resolve().parent / "data"
ROOT = Path(__file__).resolve().parents[2]


class FakeGenerator:
    """The closed loop, answered from a summary wrk once printed: what the harness does
    with a generator's result is real, the load is not."""
    name = "wrk"
    open_model = False

    def __init__(self):
        self.requests: list[LoadRequest] = []

    def version(self, host) -> str:
        return "fake-wrk 1.0"

    def open_connections(self, connections: int, threads: int) -> int:
        return connections

    def run(self, request: LoadRequest, *, host, on_start=None, cpus=None) -> LoadResult:
        self.requests.append(request)
        client = host.spawn(["fake-wrk", request.base_url])       # the sampler watches it
        if on_start:
            on_start(client.pid)
        host.accepted += request.connections                       # each one accepted
        client.kill()
        stdout = (DATA / "wrk_to_json_200_stdout.txt").read_text()
        return LoadResult(command=["fake-wrk", request.base_url],
                          summary=wrk.parse_wrk_output(stdout, connections=request.connections),
                          client_cpu_s=0.4, wall_s=request.duration_s, exit_code=0,
                          threads=request.threads, connections=request.connections)

    def describe(self, request, result) -> dict:
        return {}


@pytest.fixture
def fake_environment(monkeypatch):
    """The machine's description without asking git or the tools (processes)."""
    from bench.runner import run
    stored = ROOT / "tests/golden/schema2-modes/results.json"
    env = json.loads(stored.read_text())["environment"]
    monkeypatch.setattr(run.environment, "environment", lambda: dict(env))
    monkeypatch.setattr(run.versions, "server_versions", lambda spec, runtime=None: {})
    # a server's own virtualenv is made by pip on a real machine (tests/integration/
    # test_envs.py); the fake host has nothing to make it with
    from bench.infra import envs
    monkeypatch.setattr(envs, "prepare", lambda *args, **kwargs: 0.0)


def test_a_two_case_run_on_a_fake_host_with_a_fake_generator(tmp_path, monkeypatch,
                                                             fake_environment):
    generator = FakeGenerator()
    monkeypatch.setitem(load.GENERATORS, "wrk", generator)
    fake = FakeHost()
    settings = Settings(results_dir=tmp_path, servers=["aiohttp"], tests=["plain", "to json"],
                        repeat=1, duration=1.0, warmup=0.0, verify=False, ceiling=False)
    cases = plan(settings, manifest.discover())
    assert len(cases) == 2
    with Session(settings, cases, hosts=Hosts(local=fake)) as session:
        stored = Run(session, cases).execute(display_mode="quiet")

    assert stored["status"] == "complete" and stored["schema_version"] == results.SCHEMA_VERSION
    assert [c["status"] for c in stored["cases"]] == ["ok", "ok"]
    sample = stored["cases"][0]["samples"][0]
    assert sample["generator"]["name"] == "wrk" and sample["summary"]["requests"] > 0
    assert sample["resources"]["server"]["processes"] >= 1
    # what really happened: both cases' load, at the case's connections, on the fake's URL
    assert [r.test for r in generator.requests] == ["plain", "to json"] or \
        [r.test for r in generator.requests] == ["to json", "plain"]
    assert all(r.base_url.startswith("http://127.0.0.1:") for r in generator.requests)
    spawned = [e for e in fake.events if e[0] == "spawn"]
    assert any("aiohttp" in " ".join(map(str, e[2])) for e in spawned), spawned
    # every server the run started was stopped
    assert all(p.returncode is not None for p in fake.spawned)
    on_disk = json.loads((results.latest_run(tmp_path) / results.RESULTS_FILE).read_text())
    results.validate(on_disk)
    assert (results.latest_run(tmp_path) / "tables.md").read_text().count("aiohttp") >= 2


def test_iterations_size_the_measured_k6_window_only(tmp_path, monkeypatch, fake_environment):
    """--iterations reaches k6's measured closed-loop request; the warm-up (wrk's closed
    loop, whatever measures) stays a window of time; the settings record what ran."""
    from bench.session import preflight
    warm, measuring = FakeGenerator(), FakeGenerator()
    measuring.name = "k6"
    monkeypatch.setitem(load.GENERATORS, "wrk", warm)
    monkeypatch.setitem(load.GENERATORS, "k6", measuring)
    monkeypatch.setattr(preflight.k6, "require_k6", lambda host: None)
    settings = Settings(results_dir=tmp_path, servers=["aiohttp"], tests=["plain"], repeat=1,
                        duration=30.0, warmup=0.5, verify=False, ceiling=False,
                        generators=("k6",), iterations=500)
    cases = plan(settings, manifest.discover())
    with Session(settings, cases, hosts=Hosts(local=FakeHost())) as session:
        stored = Run(session, cases).execute(display_mode="quiet")
    assert [(r.iterations, r.duration_s) for r in measuring.requests] == [(500, 30.0)]
    assert [(r.iterations, r.duration_s) for r in warm.requests] == [(None, 0.5)]
    assert stored["settings"]["iterations"] == 500
    assert stored["cases"][0]["samples"][0]["generator"]["name"] == "k6"
