"""What W means per concurrency model: W processes for a process-based server, W threads
for threads that each run their own event loop (actix); for a work-stealing runtime, as
many threads as the server's CPUs (at most W) by default, or W with --runtime-threads
workers."""
from __future__ import annotations

from pathlib import Path

import pytest

from bench.core.manifest import ManifestError, load_manifest
from bench.core.plan import plan
from bench.core.settings import SelectionError, Settings
from bench.infra.fake import FakeHost
from bench.infra.server import server_workers


def spec(tmp_path: Path, concurrency: str, scheduler: str = "work-stealing"):
    name = f"{concurrency}-{scheduler}"
    folder = tmp_path / name
    folder.mkdir()
    top = f'scheduler = "{scheduler}"\n' if concurrency == "threads" else ""
    (folder / "manifest.toml").write_text(
        f'id = "{name}"\n{top}concurrency = "{concurrency}"\ndatabases = ["postgres"]\n'
        f'orm = [false]\nstart = ["x"]\n[workers]\ncount = "none"\nreason = "r"\n')
    return load_manifest(folder)


def test_threads_follow_the_cpus_processes_stay_w(tmp_path):
    threads, processes = spec(tmp_path, "threads"), spec(tmp_path, "processes")
    assert threads.workers_for(8, "cpus", 2) == 2
    assert threads.workers_for(8, "workers", 2) == 8
    assert threads.workers_for(1, "cpus", 4) == 1          # never more than W
    assert processes.workers_for(8, "cpus", 2) == 8
    assert spec(tmp_path, "threads", "per-thread").workers_for(8, "cpus", 2) == 8


def test_work_stealing_is_for_threads_only(tmp_path):
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "manifest.toml").write_text(
        'id = "p"\nscheduler = "work-stealing"\nconcurrency = "processes"\ndatabases = []\n'
        'start = ["x"]\n')
    with pytest.raises(ManifestError, match="work-stealing"):
        load_manifest(folder)


def test_the_cpus_are_the_pinned_ones_else_the_hosts_usable_ones(tmp_path):
    threads = spec(tmp_path, "threads")
    fake = FakeHost()                                       # 2 CPUs
    assert server_workers(threads, Settings(), fake) == 2
    assert server_workers(threads, Settings(server_cpus="0"), fake) == 1
    assert server_workers(threads, Settings(runtime_threads="workers"), fake) == 8


def test_an_unknown_rule_is_refused_naming_the_flag(tmp_path):
    with pytest.raises(SelectionError, match="--runtime-threads"):
        plan(Settings(runtime_threads="cores"), {"threads-work-stealing": spec(tmp_path, "threads")})
