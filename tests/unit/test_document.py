"""The records that write results.json (bench.storage.document, case, sample) and schema 3:
the schema lists exactly what the records write, a key it does not describe is refused
when saved, a document made by the runner's own code validates, and the status
transitions do what the runner and the reaper rely on."""
import dataclasses
import json
import re
from pathlib import Path

import pytest

from bench.storage import migrate, results
from bench.storage.case import CaseRecord
from bench.storage.document import RunRecord, load_run
from bench.storage.record import Record, RecordError
from bench.storage.sample import BurstRecord, GeneratorRecord, SampleRecord
from tests.unit.conftest import case_doc, run_doc

ROOT = Path(__file__).resolve().parents[2]


def every_record(cls=Record) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        if "SCHEMA" in vars(sub):
            found.append(sub)
        found += every_record(sub)
    return found


def at(schema: dict, pointer: str) -> dict:
    node = schema
    for part in pointer.lstrip("#").strip("/").split("/") if pointer != "#" else []:
        node = node[part]
    return node


def closed_objects(node, pointer="#") -> set[str]:
    """The pointers of every object schema 3 closes (additionalProperties false)."""
    found = set()
    if isinstance(node, dict):
        if node.get("additionalProperties") is False:
            found.add(pointer)
        for key, value in node.items():
            found |= closed_objects(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found |= closed_objects(value, f"{pointer}/{i}")
    return found


def a_run(**case_kw) -> RunRecord:
    return RunRecord.from_json(run_doc([case_doc("fast", "postgres", False, "get user",
                                                 rps=(9000, 9100), **case_kw)], repeat=2))


# ------------------------------------------------------------------ schema = records

def test_schema_3_lists_exactly_the_keys_each_record_writes():
    schema = results.schema()
    records = every_record()
    assert len(records) >= 15
    for cls in records:
        obj = at(schema, cls.SCHEMA)
        assert obj["additionalProperties"] is False, cls.__name__
        assert sorted(obj["properties"]) == sorted(cls.keys()), cls.__name__
        assert sorted(obj.get("required", [])) == sorted(cls.required_keys()), cls.__name__


def test_every_object_schema_3_closes_is_a_record():
    """So the test above covers every closed object: none is closed by hand alone."""
    assert closed_objects(results.schema()) == {cls.SCHEMA for cls in every_record()}


class _Extra:
    """A record of the same kind that writes one key more."""
    @staticmethod
    def of(record: Record) -> Record:
        cls = dataclasses.make_dataclass(
            f"Extended{type(record).__name__}", [("extra", int, dataclasses.field(default=1))],
            bases=(type(record),), kw_only=True)
        return cls(**{f.name: getattr(record, f.name) for f in dataclasses.fields(record)})


def _extend_run(run):
    return _Extra.of(run), "(top level)"


def _extend_case(run):
    run.cases[0] = _Extra.of(run.cases[0])
    return run, "cases/0"


def _extend_sample(run):
    run.cases[0].samples[1] = _Extra.of(run.cases[0].samples[1])
    return run, "cases/0/samples/1"


def _extend_generator(run):
    sample = run.cases[0].samples[0]
    sample.generator = _Extra.of(sample.generator)
    return run, "cases/0/samples/0/generator"


def _extend_load(run):
    run.load = _Extra.of(run.load)
    return run, "load"


def _extend_history(run):
    run.cases[0].rerun("2026-01-01T00:00:00+00:00")
    run.cases[0].history[0] = _Extra.of(run.cases[0].history[0])
    return run, "cases/0/history/0"


@pytest.mark.parametrize("extend", [_extend_run, _extend_case, _extend_sample,
                                    _extend_generator, _extend_load, _extend_history])
def test_a_key_that_schema_3_does_not_describe_is_refused_when_saved(extend, tmp_path):
    run, where = extend(a_run())
    assert run.to_json() != a_run().to_json()
    with pytest.raises(results.ResultsError,
                       match=f"schema version 3 at {re.escape(where)}: .*'extra' was unexpected"):
        run.save(tmp_path / "run")
    assert not (tmp_path / "run" / "results.json").exists()


def test_a_stored_key_that_schema_3_does_not_describe_is_refused_by_the_records():
    doc = a_run().to_json()
    doc["cases"][0]["samples"][0]["wrk"] = {}
    with pytest.raises(RecordError, match="SampleRecord: key.*'wrk'.*schema 3 does not describe"):
        RunRecord.from_json(doc)
    with pytest.raises(RecordError, match="schema version 2"):
        RunRecord.from_json({**a_run().to_json(), "schema_version": 2})


def test_records_read_back_what_they_wrote(sample_doc, tmp_path):
    run = RunRecord.from_json(sample_doc)
    assert run.to_json() == sample_doc
    run.save(tmp_path)
    assert load_run(tmp_path) == run
    assert results.load(tmp_path) == sample_doc


# ------------------------------------------------------------------ the runner's document

@pytest.fixture
def runner_run(tmp_path, monkeypatch):
    """A run as the runner makes it: its real constructor, every mode that adds a key.
    oha's version is the one thing asked of a tool: a unit test does not need oha built."""
    from bench.load import oha
    monkeypatch.setattr(oha.Oha, "version", lambda self, host=None: f"oha {oha.OHA_VERSION}")
    from bench.core import manifest
    from bench.core.plan import plan
    from bench.core.settings import Settings
    from bench.runner import Run
    settings = Settings(results_dir=tmp_path, servers=["actix-web"], tests=["plain"], repeat=2, rates=["50%"], burst=1.0,
                        connection_modes=["keep-alive", "close"], server_cpus="0")
    from bench.session import Session
    run = Run(Session(settings), plan(settings, manifest.discover()),
              unavailable={"gone": "its toolchain is missing"})
    run.save()
    return run


def _measured(sample: SampleRecord, generator: str) -> None:
    """What the runner stores of one measured window, from the generators' parsers and
    the judge (the measuring itself is the e2e tests')."""
    from bench.analysis import judge
    from bench.load import wrk
    from tests.unit.test_oha import parsed
    stdout = (ROOT / "tests/unit/data/wrk_to_json_200_stdout.txt").read_text()
    closed = wrk.parse_wrk_output(stdout, connections=16)
    sample.begin(results.now_iso())
    sample.log = "logs/x#0.log"
    sample.db_settle = {"seconds": 0.1, "quiet": True, "steps": ["checkpoint"]}
    sample.warmup = closed
    sample.connections_opened = 17
    sample.burst = BurstRecord(seconds=1.0, summary=closed, connections_opened=400)
    sample.summary = closed if generator == "wrk" else parsed("plain_clean")
    sample.generator = GeneratorRecord(
        name=generator, connection_close=False, command=[generator, "http://x/"],
        exit_code=0, client_cpu_s=0.5, wall_s=1.0, threads=1, connections=16,
        **({"rate": sample.summary["rate"]} if generator == "oha" else {}))
    sample.resources = {"server": {"cpu_s": 1.0, "mean_cores": 1.0, "peak_cores": 1.2,
                                   "memory_mean_mb": 10.0, "memory_peak_mb": 11.0,
                                   "memory_first_mb": 10.0, "memory_last_mb": 10.5,
                                   "memory_kind": "pss", "processes": 2},
                        "window_s": 1.0, "readings": 10}
    verdict = judge.judge_sample(sample.to_json(), 0.001)
    sample.error_rate = verdict.figures["error_rate"]
    sample.checks.update(verdict.figures)
    sample.warnings += verdict.warnings
    sample.judged(verdict.valid, verdict.reason)


def test_a_run_the_runner_makes_validates_with_every_key_it_can_write(runner_run, tmp_path):
    from bench.cli.resume import find_run
    from bench.storage import resume
    doc = runner_run.doc
    assert doc.load.open_model.rates == ["50%"] and doc.unavailable == {"gone": "its toolchain is missing"}
    assert doc.topology["roles"] and doc.load.placement.server == [0]
    oha_case = next(c for c in doc.cases if c.key["generator"] == "oha")
    for case in doc.cases:
        _measured(case.samples[0], "oha" if case is oha_case else "wrk")
    doc.cases[0].samples[1].mark_failed("server exited during the run (code 7)")
    doc.cases[0].samples[1].log_tail = "panic"
    doc.databases["postgres"] = {"engine": "postgres", "host": "127.0.0.1", "port": 1,
                                 "name": "bench", "user": "bench", "mode": "local",
                                 "version": "15", "restarts": [results.now_iso()]}
    doc.cleanup_problems = ["a data folder was kept"]
    doc.cases[1].instructions = _counted()
    runner_run.save()
    stored = runner_run.stored
    assert stored["cases"][1]["instructions"]["runs"][0]["python"]["per_request"] == 2100.0
    assert stored["cases"][0]["status"] == "failed"        # derived, and taken by the record
    assert doc.cases[0].status == "failed" and doc.cases[0].stats["samples"] == 2
    sample = stored["cases"][1]["samples"][0]
    assert {"db_settle", "connections_opened", "burst", "generator"} <= set(sample)
    assert "wrk" not in sample
    # interrupted, then continued with --rerun-failed: history and a continuation
    doc.interrupt("interrupted (Ctrl-C or SIGTERM)", "run interrupted before this sample")
    doc.finish(results.now_iso())
    runner_run.save()
    again = load_run(find_run(str(runner_run.run_dir), tmp_path))
    assert again == doc
    assert resume.prepare_rerun(again, results.now_iso()) == [
        c.id for c in doc.cases if c.status != "ok"]
    again.continued("rerun-failed", results.now_iso(), {"commit": "abc"})
    stored = again.save(runner_run.run_dir)
    assert stored["continuations"][0]["samples"] == again.samples_to_measure() > 0
    assert results.load(runner_run.run_dir) == stored
    assert json.loads((runner_run.run_dir / "results.json").read_text()) == stored


def _counted():
    """A case's count (--instructions) with every key a count writes."""
    from bench.storage.count import CountRecord, CountRun, PythonCount, SyscallCount
    record = CountRecord.planned(key="x/none/raw/plain", method="callgrind",
                                 tool="valgrind-3.19.0", requests=1000, warmup=1500,
                                 workers=1, seed=1, runs=1,
                                 environment={"PYTHONHASHSEED": "0"})
    record.counted(CountRun(
        at=results.now_iso(), instructions_per_request=260_000.5,
        instructions={"counted": 2.7e8, "background": 1e7, "net": 2.6e8},
        processes=[{"pid": 1, "command": "python app.py", "counted": 2.7e8,
                    "background": 1e7, "net": 2.6e8, "seconds": 9.1}],
        functions={"_PyEval_EvalFrameDefault": 62_000.0}, seconds={"total": 45.0},
        profile="counts/x/run1/instructions",
        syscalls=SyscallCount(method="strace", per_request=4.0, waits=0.5,
                              by_name={"write": 1.0, "futex": 0.5},
                              background=0.1, profile="counts/x/run1/syscalls"),
        python=PythonCount(per_request=2100.0, functions={"app.plain (app.py)": 40.0},
                           profile="counts/x/run1/python")))
    assert record.status == "ok" and record.values() == [260_000.5]
    return record


# ------------------------------------------------------------------ transitions

def test_a_sample_moves_from_pending_to_its_outcome():
    sample = SampleRecord.pending(1, 2)
    assert (sample.index, sample.round, sample.status, sample.reason) == (1, 2, "pending", None)
    assert sample.unmeasured
    sample.judged(True, None)
    assert (sample.status, sample.reason) == ("ok", None) and not sample.unmeasured
    sample.mark_invalid("table has 9 rows after the run")      # a check after the verdict
    assert (sample.status, sample.reason) == ("invalid", "table has 9 rows after the run")
    for mark, status in ((SampleRecord.mark_failed, "failed"),
                         (SampleRecord.mark_verification_failed, "verification failed"),
                         (SampleRecord.mark_interrupted, "interrupted")):
        sample = SampleRecord.pending(0, 0)
        mark(sample, "why")
        assert (sample.status, sample.reason) == (status, "why")
    assert SampleRecord.pending(0, 0).to_json() == {
        "index": 0, "round": 0, "status": "pending", "reason": None, "warnings": [],
        "started_at": None, "summary": None, "warmup": None, "error_rate": None,
        "generator": None, "resources": None, "server_process": None, "checks": {},
        "overhead_s": {}, "log": None}


@pytest.mark.parametrize("stop, status", [(RunRecord.interrupt, "interrupted"),
                                          (RunRecord.fail, "failed")])
def test_a_run_that_stops_early_ends_only_its_pending_samples(stop, status):
    run = a_run()
    run.start()
    assert (run.status, run.reason) == ("running", None)
    run.cases[0].samples.append(SampleRecord.pending(2, 2))
    run.cases[0].samples.append(SampleRecord.pending(3, 3))
    run.cases[0].samples[3].mark_interrupted("an earlier sitting")
    stop(run, "why the run stopped", "why this sample was not measured")
    assert (run.status, run.reason) == (status, "why the run stopped")
    assert [(s.status, s.reason) for s in run.cases[0].samples] == [
        ("ok", None), ("ok", None), (status, "why this sample was not measured"),
        ("interrupted", "an earlier sitting")]
    run.complete()
    assert run.status == "complete"


def test_rerun_keeps_the_samples_as_history_and_starts_again():
    case = CaseRecord.from_json(case_doc("x", "none", False, "plain", rps=(5, 6),
                                         status="invalid", reason="errors"))
    case.derived("invalid", "2 of 2 samples invalid: errors", ["w"], {"status": "invalid"})
    old = case.samples
    case.rerun("t1")
    case.rerun("t2")
    assert [h.replaced_at for h in case.history] == ["t1", "t2"]
    assert case.history[0].samples is old and case.history[0].status == "invalid"
    assert case.history[1].status == "pending"
    assert [(s.index, s.round, s.status) for s in case.samples] == [(0, 0, "pending"),
                                                                   (1, 1, "pending")]
    assert (case.status, case.reason, case.warnings, case.stats) == ("pending", None, [], None)


def test_the_reaper_marks_a_run_left_running_interrupted(tmp_path):
    from bench.infra.state import _mark_interrupted
    run = a_run()
    run.cases[0].samples[1] = SampleRecord.pending(1, 1)
    run.start()
    run.save(tmp_path)
    assert _mark_interrupted(str(tmp_path), 4242) == str(tmp_path)
    again = load_run(tmp_path)
    assert again.status == "interrupted" and "pid 4242" in again.reason
    assert again.finished_at is not None
    assert [(s.status, s.reason) for s in again.cases[0].samples] == [
        ("ok", None), ("interrupted", "the harness was killed before this sample was measured")]
    assert _mark_interrupted(str(tmp_path), 4242) is None     # not running any more


# ------------------------------------------------------------------ migration

def test_schema_2_samples_store_the_generator_under_its_own_name():
    v2 = json.loads((ROOT / "tests/golden/schema2/results.json").read_text())
    v2["cases"][0]["samples"][0]["wrk"]["generator"] = "oha"
    v2["cases"][0]["history"] = [{"replaced_at": "t", "status": "failed", "reason": "x",
                                  "samples": [dict(v2["cases"][0]["samples"][1])]}]
    v3 = migrate.v2_to_v3(v2)
    assert (v3["schema_version"], v3["migrated_from"]) == (3, 2)
    first, second = v3["cases"][0]["samples"][:2]
    assert first["generator"]["name"] == "oha" and "generator" not in first["generator"]
    assert second["generator"] == {"name": "wrk", **v2["cases"][0]["samples"][1]["wrk"]}
    assert list(second) == [("generator" if k == "wrk" else k)
                            for k in v2["cases"][0]["samples"][1]]
    assert "wrk" not in v3["cases"][0]["history"][0]["samples"][0]
    assert "wrk" in v2["cases"][0]["samples"][0]             # the input is left alone
    results.validate(v3)
    assert migrate.to_current(v3) == v3


def test_what_schema_2_did_not_require_is_filled_with_the_blank_its_writers_used():
    v2 = json.loads((ROOT / "tests/golden/schema2/results.json").read_text())
    del v2["reason"], v2["servers"], v2["cases"][0]["stats"]
    sample = v2["cases"][0]["samples"][0]
    for key in ("warnings", "started_at", "warmup", "error_rate", "wrk", "resources",
                "server_process", "checks", "overhead_s", "log"):
        del sample[key]
    results.validate(v2, 2)
    v3 = migrate.to_current(v2)
    results.validate(v3)
    assert (v3["reason"], v3["servers"], v3["cases"][0]["stats"]) == (None, {}, None)
    assert v3["cases"][0]["samples"][0]["generator"] is None
    assert v3["cases"][0]["samples"][0]["warnings"] == []


@pytest.mark.parametrize("fixture", sorted((ROOT / "tests/golden").glob("*/results.json")),
                         ids=lambda p: p.parent.name)
def test_every_stored_fixture_migrates_to_a_valid_run_record(fixture):
    doc = results.load(fixture)
    results.validate(doc)
    assert RunRecord.from_json(doc).to_json() == doc


def test_a_key_a_record_does_not_have_cannot_be_set_and_lost():
    with pytest.raises(AttributeError):
        SampleRecord.pending(0, 0).wrk = {}
