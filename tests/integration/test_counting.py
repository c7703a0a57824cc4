"""A real count (--instructions) of the tunable_cost fixture server: under callgrind, with
strace attached, and with its interpreter's own tracer; and perf's attach-and-control
mechanism, driven with a software event this machine has (a system call tracepoint), held
against strace's count of the same server's system calls. The A/A spread and planted work
of whole runs are in tests/e2e/test_instructions.py (make test-all)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bench.core.context import RunContext
from bench.core.manifest import discover
from bench.core.plan import Case, LoadParams, Variant
from bench.core.settings import Settings
from bench.infra.counters.callgrind import Callgrind
from bench.infra.counters.callgrind_files import read
from bench.infra.counters.perf import Perf
from bench.infra.host import LOCAL
from bench.runner.count import CaseCount
from tests.conftest import TEST_SERVER_PORT
from tests.fixtures.versions import version

REQUESTS = 100
LOOP_K = 200


def fixture_case(root: Path, loop_k: int) -> Case:
    folder = version(root, {"counted": "0"}, loops={"counted": loop_k})
    spec = discover([folder / "servers"])["counted"]
    return Case(Variant(spec, "none", False), "plain", LoadParams(8))


def counter(case: Case, tmp_path: Path, instructions) -> CaseCount:
    context = RunContext.of(Settings(port=TEST_SERVER_PORT, instructions=True,
                                     instructions_requests=REQUESTS))
    # the fixture's clock-driven work is its accept loop's select() every 0.5 s: a
    # second of idle window sees it
    plan = replace(context.count, idle_s=1.0)
    return CaseCount(case, context, plan, endpoint=None, host=LOCAL,
                     instructions=instructions, syscalls=True)


def test_a_count_under_callgrind_strace_and_pythons_tracer(tmp_path):
    case = fixture_case(tmp_path / "v", LOOP_K)
    run = counter(case, tmp_path, lambda where: Callgrind(LOCAL, where)).run(
        tmp_path / "count", tmp_path)
    assert run.connections == 1
    # a Python HTTP server answers a request in some 10^5 instructions, and the planted
    # loop is some 10^4 of them: neither is a zero nor a runaway
    assert 20_000 < run.instructions_per_request < 2_000_000
    assert run.instructions["net"] == pytest.approx(run.instructions_per_request * REQUESTS,
                                                    rel=1e-4)
    assert run.processes and all(p["seconds"] > 0 for p in run.processes)
    # the dumps are callgrind files of the counted window, kept for callgrind_annotate
    dumps = sorted((tmp_path / run.profile).glob("callgrind.out.*.1"))
    assert dumps and sum(read(d).total for d in dumps) == run.instructions["counted"]
    assert "_PyEval_EvalFrameDefault" in " ".join(run.functions)
    # the kernel's side of the same requests: one read and one write at least
    calls = run.syscalls
    assert calls.reason is None and 2 <= calls.per_request < 50, calls
    assert calls.by_name and any(n in calls.by_name for n in ("sendto", "write", "send"))
    # where it went, in Python's names: the planted loop is the fixture's planted_work
    python = run.python
    assert python.reason is None, python.reason
    planted = next(v for k, v in python.functions.items() if ".planted_work " in k)
    assert planted > LOOP_K * 3      # FOR_ITER, STORE_FAST, the addition... per iteration


def test_perf_counts_a_window_it_enables_and_disables_as_strace_does(tmp_path):
    """perf's path: attached to each process, events enabled and disabled through its
    control FIFO. One system call's tracepoint stands in for instructions:u, which this
    machine's CPU does not expose; its count must agree with strace's count of that call.
    sendto, not every call: the handler and accept threads' futex calls (the GIL handed
    over) depend on timing, and a busy machine added one per request (4.16 against 3.12)."""
    case = fixture_case(tmp_path / "v", 0)
    run = counter(case, tmp_path, lambda where: Perf(LOCAL, where,
                                                     event="syscalls:sys_enter_sendto")).run(
        tmp_path / "count", tmp_path)
    sent = run.syscalls.by_name.get("sendto")
    assert sent is not None and sent >= 1, run.syscalls.by_name
    assert run.instructions_per_request == pytest.approx(sent, rel=0.02)
