"""Faults during a run, end to end: SIGINT and SIGTERM at each phase, a second signal
during the cleanup, SIGKILL of the harness (cleaned up by the next invocation), and
--resume completing an interrupted run. Real databases, servers and wrk; the phases are
found in the harness's plain one-line-per-event output."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from bench.storage import results
from tests.e2e.test_run_bench import FIXTURES, PORTS, REPO, load_running, port_is_free, run_bench

from tests.conftest import E2E_MYSQL_PORT, E2E_PG_PORT, E2E_PORT
pytestmark = pytest.mark.e2e
OUR_PORTS = tuple(str(p) for p in (E2E_PORT, E2E_PORT + 1, E2E_PG_PORT, E2E_MYSQL_PORT))


def run_processes() -> list[psutil.Process]:
    """Processes of a harness run of these tests: their command line or environment
    names one of the tests' ports (servers get BENCH_PORT, databases -p/--port, wrk
    the URL)."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if proc.pid == os.getpid():
            continue
        try:
            text = " ".join(proc.info["cmdline"] or [])
            if "pytest" in text:
                continue
            env = proc.environ()
        except psutil.Error:
            continue
        if any(p in text for p in OUR_PORTS) or env.get("BENCH_PORT") in OUR_PORTS:
            found.append(proc)
    return found


def nothing_left() -> None:
    # the harness has exited: what it stopped is on its way out (a busy machine may take
    # a few seconds to reap it); what it forgot stays, and is named below
    deadline = time.monotonic() + 30
    while run_processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [(p.pid, " ".join(p.cmdline())[:120]) for p in run_processes()]
    assert not left, f"processes of the run still alive: {left}"
    for port in OUR_PORTS:
        assert port_is_free(int(port)), f"port {port} still busy"


class Harness:
    """run_bench.py in the background, its output read line by line."""

    def __init__(self, *args: str, ports: list[str] = PORTS):
        self.proc = subprocess.Popen([sys.executable, "run_bench.py", *args, "--threads", "1",
                                      *ports], cwd=REPO, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for(self, text: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.proc.kill()
        pytest.fail(f"never saw {text!r}; output:\n{''.join(self.lines)[-3000:]}")

    def build_running(self, argv: list[str], timeout: float = 60) -> psutil.Process | None:
        """Waits until the harness runs `argv` (a build step) as one of its descendants:
        that process (only the harness's own: another test may run the same command)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                children = psutil.Process(self.proc.pid).children(recursive=True)
            except psutil.Error:
                return None
            for child in children:
                try:
                    if child.cmdline() == argv:
                        return child
                except psutil.Error:
                    continue
            time.sleep(0.05)
        return None

    def finish(self, timeout: float = 90) -> int:
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return code

    @property
    def output(self) -> str:
        return "".join(self.lines)


def a_db_run(tmp_path: Path, *extra: str) -> Harness:
    """Four samples of gin, one on PostgreSQL: each phase lasts long enough for a signal
    sent 0.3 s after its line to land in it, and whichever phase one lands in, the run
    stops the same way (the tests assert on that, never on the phase)."""
    return Harness("--servers", "gin", "--tests", "get_user,plain", "--databases",
                   "postgres", "--orm", "raw", "--repeat", "2", "--duration", "1.5",
                   "--warmup", "1", "--no-ceiling", "--order-seed", "3",
                   "--results-dir", str(tmp_path), *extra)


def stored(tmp_path: Path) -> dict:
    return results.load(results.latest_run(tmp_path))     # validated against the schema


# SIGTERM's three in make test-all: SIGINT's run the same lines in make test
@pytest.mark.parametrize("sig", [signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.full)])
@pytest.mark.parametrize("phase", ["databases (local): starting", ": warm-up", ": measure"])
def test_a_signal_at_any_phase_stops_everything_and_keeps_a_valid_file(tmp_path, phase, sig):
    run = a_db_run(tmp_path)
    run.wait_for(phase)
    time.sleep(0.3)
    run.proc.send_signal(sig)
    assert run.finish() == 130, run.output[-3000:]
    nothing_left()
    doc = stored(tmp_path)
    assert doc["status"] == "interrupted" and doc["finished_at"]
    statuses = {s["status"] for c in doc["cases"] for s in c["samples"]}
    assert "pending" not in statuses and "interrupted" in statuses


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_a_signal_during_the_build_and_a_second_one_during_cleanup(tmp_path):
    run = Harness("--servers", "slow_build", "--servers-dir", str(FIXTURES), "--tests", "plain",
                  "--no-ceiling", "--repeat", "1", "--duration", "1", "--results-dir",
                  str(tmp_path))
    run.wait_for("building slow_build")
    build = run.build_running(["sleep", "60"])
    assert build, run.output[-3000:]
    run.proc.send_signal(signal.SIGTERM)
    assert run.finish() == 130, run.output[-3000:]
    assert stored(tmp_path)["status"] == "interrupted"
    # the harness's own build step ends (a busy machine may take a moment to reap it);
    # a `sleep 60` of another test running meanwhile is not its business
    try:
        build.wait(30)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        assert build.status() == psutil.STATUS_ZOMBIE, "the build step outlived the harness"

    run = a_db_run(tmp_path)
    run.wait_for(": measure")
    run.proc.send_signal(signal.SIGINT)
    run.wait_for("interrupted: stopping servers and databases")
    run.proc.send_signal(signal.SIGINT)                  # impatient: the cleanup goes on
    assert run.finish() == 130, run.output[-3000:]
    nothing_left()
    assert stored(tmp_path)["status"] == "interrupted"


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_resume_completes_an_interrupted_run_with_its_stored_settings(tmp_path):
    run = a_db_run(tmp_path)
    run.wait_for("[2/4]")
    run.wait_for(": measure")
    run.proc.send_signal(signal.SIGINT)
    assert run.finish() == 130
    first = stored(tmp_path)
    done_before = {(c["id"], s["index"]): s["started_at"] for c in first["cases"]
                   for s in c["samples"] if s["status"] == "ok"}
    assert 1 <= len(done_before) < 4
    run_dir = results.latest_run(tmp_path)
    # other flags are not used: the stored settings are
    out = run_bench("--resume", str(run_dir), "--duration", "9", *PORTS)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    doc = stored(tmp_path)
    assert doc["status"] == "complete" and doc["run_id"] == first["run_id"]
    assert all(s["status"] == "ok" for c in doc["cases"] for s in c["samples"])
    for (case_id, index), started in done_before.items():   # finished samples kept as they were
        case = next(c for c in doc["cases"] if c["id"] == case_id)
        assert case["samples"][index]["started_at"] == started
    assert {s["summary"]["duration_s"] < 5 for c in doc["cases"] for s in c["samples"]} == {True}
    assert doc["continuations"][0]["kind"] == "resume"
    nothing_left()
    # a finished run has nothing to resume
    again = run_bench("--resume", str(run_dir), *PORTS)
    assert again.returncode == 0 and "no unfinished sample" in again.stdout


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_a_harness_killed_with_sigkill_is_cleaned_up_by_the_next_invocation(tmp_path):
    run = a_db_run(tmp_path)
    run.wait_for(": measure")
    time.sleep(0.5)
    run.proc.kill()
    run.finish()
    assert run_processes(), "nothing was running when the harness was killed"
    out = run_bench("verify", "--servers", "nope", *PORTS)
    # the harnesses' state is the machine's: with parallel test workers, another worker's
    # harness starting first may be the next invocation, and it cleans up this one (seen
    # in CI); whichever did, the run is then marked and nothing of it is left. The message
    # may also name another test's dead harness (the Docker faults kill one too), so only
    # the line naming this pid speaks for this run.
    ours = [line for line in out.stderr.splitlines()
            if f"harness that died (pid {run.proc.pid})" in line]
    if ours:
        assert "marked" in ours[0] and "interrupted" in ours[0], out.stderr
    assert stored(tmp_path)["status"] == "interrupted"
    nothing_left()
    doc = stored(tmp_path)
    assert doc["status"] == "interrupted" and "killed without a chance to clean up" in doc["reason"]


def postmaster(port: str) -> psutil.Process | None:
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["name"] == "postgres" and "-p" in cmd and port in cmd:
            return proc
    return None


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_a_database_killed_mid_run_fails_its_sample_and_is_restarted_for_the_next(tmp_path):
    run = Harness("--servers", "gin", "--tests", "get_user", "--databases", "postgres",
                  "--orm", "raw", "--repeat", "2", "--duration", "3", "--warmup", "0",
                  "--no-ceiling", "--results-dir", str(tmp_path))
    run.wait_for("[1/2] gin/postgres/raw/get_user@c64 round 1: measure")
    # killed while wrk loads the first sample (--warmup 0: its wrk is the measured one)
    assert load_running(alive=lambda: run.proc.poll() is None), run.output[-3000:]
    victim = postmaster(str(E2E_PG_PORT))
    assert victim is not None, f"no local PostgreSQL on port {E2E_PG_PORT}"
    victim.kill()
    assert run.finish(timeout=300) == 1, run.output[-3000:]
    doc = stored(tmp_path)
    assert doc["status"] == "complete"
    first, after = doc["cases"][0]["samples"]
    assert first["status"] in ("failed", "invalid")
    assert first["reason"].startswith("the postgres database died during this sample"), first
    assert first["log_tail"]
    assert after["status"] == "ok", after["reason"]     # on the restarted database
    assert len(doc["databases"]["postgres"]["restarts"]) == 1
    nothing_left()


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_a_server_killed_mid_run_fails_its_sample_and_the_suite_goes_on(tmp_path):
    run = Harness("--servers", "gin", "--tests", "plain,to_json", "--repeat", "1",
                  "--duration", "3", "--warmup", "0", "--no-ceiling", "--order-seed", "1",
                  "--results-dir", str(tmp_path))
    run.wait_for("[1/2]")
    run.wait_for(": measure")
    # killed while wrk loads the first case (--warmup 0: its wrk is the measured one)
    assert load_running(alive=lambda: run.proc.poll() is None), run.output[-3000:]
    servers = [p for p in run_processes() if p.name() == "server" and "gin" in p.exe()]
    assert servers
    for proc in servers:
        proc.kill()
    assert run.finish() == 1, run.output[-3000:]
    doc = stored(tmp_path)
    first, second = (doc["cases"][i]["samples"][0] for i in range(2))
    killed, survived = (first, second) if first["status"] != "ok" else (second, first)
    assert killed["status"] == "failed" and "server exited during the run" in killed["reason"]
    assert killed["log_tail"]          # at least the command line the harness logged
    assert survived["status"] == "ok"
    nothing_left()


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_the_stress_checks_run_a_burst_and_compare_the_workers(tmp_path):
    """The stress preset's checks on a short run (the preset itself holds 512 connections
    for 30 s: a benchmark, reported by the harness, not a test)."""
    out = run_bench("--servers", "fastapi", "--tests", "plain", "--preset", "stress",
                    "--duration", "2", "--warmup", "0", "--burst", "1", "--connections", "128",
                    "--no-ceiling", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    sample = stored(tmp_path)["cases"][0]["samples"][0]
    assert sample["status"] == "ok", sample["reason"]
    burst = sample["burst"]
    assert burst["seconds"] == 1 and burst["summary"]["requests"] > 0
    assert burst["connections_opened"] >= 0.9 * burst["summary"]["requests"]
    pids = sample["server_process"]["worker_pids"]
    assert len(pids["before"]) == 8 and pids["before"] == pids["after"]
    assert sample["resources"]["server"]["memory_last_mb"] > 0


@pytest.mark.full          # make test-all: the everyday tier's tests run its lines (docs/testing.md)
def test_rerun_failed_measures_only_the_failed_cases_again_and_keeps_history(tmp_path):
    out = run_bench("--servers", "never_ready,gin", "--servers-dir", str(FIXTURES),
                    "--tests", "plain", "--no-ceiling", "--repeat", "1", "--duration", "1",
                    "--warmup", "0", "--results-dir", str(tmp_path), *PORTS)
    assert out.returncode == 1, out.stdout[-2000:]
    first = stored(tmp_path)
    ok_before = next(c for c in first["cases"] if c["server"] == "gin")["samples"][0]
    run_dir = results.latest_run(tmp_path)
    again = run_bench("--rerun-failed", str(run_dir), "--servers-dir", str(FIXTURES), *PORTS)
    assert again.returncode == 1, again.stdout[-2000:] + again.stderr[-2000:]
    doc = stored(tmp_path)
    by_server = {c["server"]: c for c in doc["cases"]}
    assert by_server["gin"]["samples"][0] == ok_before          # not measured again
    failed = by_server["never_ready"]
    assert failed["status"] == "failed" and len(failed["history"]) == 1
    assert failed["history"][0]["samples"][0]["status"] == "failed"
    assert failed["samples"][0]["started_at"] != failed["history"][0]["samples"][0]["started_at"] \
        or failed["samples"][0]["log_tail"]
    assert doc["continuations"][-1]["kind"] == "rerun-failed"
    nothing_left()
