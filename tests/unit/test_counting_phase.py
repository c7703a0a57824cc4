"""The counting phase of a run (--instructions) on a stand-in run and a fake count: which
cases get a count, which share one, the A B B A order of an A/B run's pairs, a count
that fails or is interrupted, and the cases that are named "not countable" (the
runtime, a machine without a counter, another host) instead of given a figure."""
from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from bench.core.context import RunContext
from bench.core.counting import CountSpec
from bench.core.plan import Case, LoadParams, Variant
from bench.core.settings import Settings
from bench.runner import counting
from bench.runner.count import CountFailed
from bench.setup.counters import Counter
from bench.storage import results
from bench.storage.case import CaseRecord
from bench.storage.count import CountRun


class _Spec:
    def __init__(self, sid, arm="", count=None, language="python"):
        self.id, self.arm, self.language = sid, arm, language
        self.label = f"{sid}@{arm}" if arm else sid
        self.count = count or CountSpec()


class _Display:
    def __init__(self):
        self.said = []

    def note(self, text):
        self.said.append(text)

    error = phase = note


def stand_in(tmp_path, cases, *, pairs=(), remote=False, runs=1):
    settings = Settings(instructions=True, instructions_runs=runs)
    records = {c.id: CaseRecord.planned(c, 1) for c in cases}
    run = SimpleNamespace(
        context=RunContext.of(settings), settings=replace(settings, verify=False),
        run_dir=tmp_path, cases=cases, records=records, build_errors={}, endpoints={},
        doc=SimpleNamespace(ab={"pairs": [list(p) for p in pairs]} if pairs else None,
                            verification={}),
        server_host=SimpleNamespace(remote=remote, name="server (bench@h2)"),
        display=_Display(), logs=tmp_path, saved=0)
    run.save = lambda: setattr(run, "saved", run.saved + 1)
    run._keep_database_up = lambda engine: None
    return run


@pytest.fixture
def counted(monkeypatch):
    """CaseCount replaced by a fake that returns the case's label's length as its
    figure; the ids of the cases counted, in order."""
    made = []

    class FakeCount:
        def __init__(self, case, *args, **kwargs):
            self.case = case

        def run(self, folder, relative_to):
            made.append(self.case.id)
            if "broken" in self.case.id:
                raise CountFailed("instructions: server exited with code 1 during the count")
            return CountRun(at="t", instructions_per_request=float(len(self.case.id)),
                            instructions={"counted": 1.0, "background": 0.0, "net": 1.0})
    monkeypatch.setattr(counting, "CaseCount", FakeCount)
    monkeypatch.setattr(counting.counters, "instruction_counter",
                        lambda asked: Counter("callgrind", "valgrind-3.19.0", "found"))
    monkeypatch.setattr(counting.counters, "syscall_counter",
                        lambda: Counter("strace", "strace-6.1", "found"))
    return made


def case(server, test="plain", connections=64, spec=None, **load):
    return Case(Variant(spec or _Spec(server), "none", False), test,
                LoadParams(connections, **load))


def test_an_ab_runs_pairs_are_counted_a_b_b_a_and_cases_share_a_key(tmp_path, counted):
    a, b = _Spec("x", "A"), _Spec("x", "B")
    cases = [case("x", spec=a), case("x", spec=b), case("x", spec=a, connections=16),
             case("x", spec=a, proxy="nginx")]
    run = stand_in(tmp_path, cases, pairs=[(cases[0].id, cases[1].id)], runs=2)
    counting.Counting(run).execute()
    assert counted == [cases[0].id, cases[1].id, cases[1].id, cases[0].id]
    first = run.records[cases[0].id].instructions
    assert first.status == results.OK and len(first.runs) == 2
    # the 16-connection case sends the same requests: the count is shared, a copy
    assert run.records[cases[2].id].instructions.to_json() == first.to_json()
    # a case behind a proxy is not counted at all
    assert not run.records[cases[3].id].instructions
    assert (tmp_path / "counts" / "README.txt").exists()


def test_a_failed_count_says_why_and_the_others_go_on(tmp_path, counted):
    cases = [case("broken"), case("fine")]
    run = stand_in(tmp_path, cases)
    counting.Counting(run).execute()
    broken = run.records[cases[0].id].instructions
    assert broken.status == results.FAILED and "exited with code 1" in broken.reason
    assert run.records[cases[1].id].instructions.status == results.OK
    assert run.saved >= 2                           # saved after each count


def test_what_cannot_be_counted_is_named_never_given_a_zero(tmp_path, counted, monkeypatch):
    uncountable = _Spec("jit", count=CountSpec(countable=False, reason="its JIT crashes"))
    run = stand_in(tmp_path, [case("jit", spec=uncountable)])
    counting.Counting(run).execute()
    record = run.records[run.cases[0].id].instructions
    assert (record.status, record.reason, record.values()) == \
        ("not countable", "jit: its JIT crashes", [])
    assert counted == []
    remote = stand_in(tmp_path, [case("x")], remote=True)
    counting.Counting(remote).execute()
    assert "counts run on this machine only" in \
        remote.records[remote.cases[0].id].instructions.reason
    monkeypatch.setattr(counting.counters, "instruction_counter",
                        lambda asked: Counter(None, None, "valgrind is not installed"))
    bare = stand_in(tmp_path, [case("x")])
    counting.Counting(bare).execute()
    assert bare.records[bare.cases[0].id].instructions.reason == \
        "no instruction counter on this machine: valgrind is not installed"


def test_an_interrupted_count_is_interrupted_and_counted_again_whole(tmp_path, counted,
                                                                     monkeypatch):
    cases = [case("x")]
    run = stand_in(tmp_path, cases, runs=2)
    original = counting.CaseCount

    class Stop(BaseException):              # what Ctrl-C is to the phase: not an Exception
        pass

    class Interrupted(original):
        def run(self, folder, relative_to):
            if len(counted) == 1:
                counted.append("stop")
                raise Stop
            return super().run(folder, relative_to)
    monkeypatch.setattr(counting, "CaseCount", Interrupted)
    with pytest.raises(Stop):
        counting.Counting(run).execute()
    record = run.records[cases[0].id].instructions
    assert record.status == results.INTERRUPTED and len(record.runs) == 1
    counted.clear()
    monkeypatch.setattr(counting, "CaseCount", original)
    counting.Counting(run).execute()                # --resume: both runs again
    assert record.status == results.OK and len(record.runs) == 2 and len(counted) == 2
