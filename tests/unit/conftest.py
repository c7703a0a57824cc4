"""Results documents with a mix of outcomes: a schema-1 document as the first harness
stored them (one measurement per case), and current ones with samples, built with the
records that write results.json (bench.storage.document)."""
import json
from pathlib import Path

import pytest

from bench.core.settings import Settings
from bench.storage.case import CaseRecord
from bench.storage.document import LoadRecord, RunRecord, Schedule
from bench.storage.sample import GeneratorRecord

DATA = Path(__file__).resolve().parent / "data"


def summary(rps: float, p50: float, errors: int = 0, requests: int = 10_000) -> dict:
    return {"requests": requests, "duration_s": 10.0, "requests_per_sec": rps, "bytes": 1,
            "latency_ms": {"min": 0.1, "mean": p50, "stdev": 0.1, "max": p50 * 5, "p50": p50,
                           "p75": p50 * 1.2, "p90": p50 * 1.5, "p99": p50 * 3, "p99_9": p50 * 4},
            "errors": {"connect": 0, "read": 0, "write": 0, "status": errors, "timeout": 0,
                       "total": errors}}


def v1_case(server, database, orm, test, status="ok", rps=1000.0, reason=None, warnings=()):
    return {"id": f"{server}/{database}/{'orm' if orm else 'raw'}/{test.replace(' ', '_')}",
            "server": server, "database": database, "orm": orm, "test": test, "status": status,
            "reason": reason, "warnings": list(warnings),
            "summary": summary(rps, 1000 / rps) if status in ("ok", "invalid") else None,
            "warmup": None, "error_rate": 0.0, "wrk": None, "server_process": None,
            "checks": {}, "overhead_s": {"restore": 0.03, "start_to_ready": 0.2, "stop": 0.1,
                                         "total": 0.33}, "log": None}


def v1_document() -> dict:
    """The schema-1 document as stored in tests/unit/data/results_v1.json."""
    return json.loads((DATA / "results_v1.json").read_text())


@pytest.fixture
def v1_doc():
    return v1_document()


class _Spec:       # what a case's variant reads of a ServerSpec
    def __init__(self, sid):
        self.id = self.label = sid


def case_doc(server, database, orm, test, rps=(1000.0,), status="ok", reason=None,
             warnings=(), connections=64, load=None, n=None) -> dict:
    """A case as stored: one sample per value of `rps`, each with `status`; `n`: the
    database suite's level."""
    from bench.core.plan import Case, LoadParams, Variant
    case = Case(Variant(_Spec(server), database, orm), test, load or LoadParams(connections), n)
    record = CaseRecord.planned(case, len(rps) or 1)
    for sample, value in zip(record.samples, rps):
        sample.status, sample.reason, sample.warnings = status, reason, list(warnings)
        sample.summary = summary(value, 1000 / value) if status in ("ok", "invalid") else None
        sample.generator = GeneratorRecord(name="wrk", command=["wrk"], exit_code=0,
                                           client_cpu_s=1.0, wall_s=10.0, threads=1,
                                           connections=connections)
        sample.resources = {"server": {"cpu_s": 10.0, "mean_cores": 1.0, "peak_cores": 1.5,
                                       "memory_mean_mb": 100.0, "memory_peak_mb": 110.0,
                                       "memory_kind": "pss", "processes": 9}}
    if not rps:
        record.samples[0].status, record.samples[0].reason = status, reason
    return record.to_json()


def run_doc(cases: list[dict], repeat: int = 3) -> dict:
    """A complete run as stored, holding `cases` (case_doc)."""
    run = RunRecord.new(
        run_id="20260102T000000Z-test", settings=Settings(repeat=repeat).public(),
        environment={"hostname": "test", "cpu_count": 2, "cpu_model": "x", "memory_gb": 4,
                     "kernel": "6.1", "cpus_usable": 2,
                     "git": {"commit": "abcdef1234567", "dirty": False}},
        load=LoadRecord(generator="wrk", threads=1, connections=64, connections_requested=64),
        schedule=Schedule(order_seed=None, rounds=repeat, order=[]),
        cases=[CaseRecord.from_json(c) for c in cases], servers={})
    run.complete()
    return run.to_json()


@pytest.fixture
def sample_doc():
    """Three samples per case: clear winners, a tie, an unstable case, failures."""
    return run_doc([
        case_doc("slow", "postgres", False, "get user", rps=(500, 510, 505)),
        case_doc("fast", "postgres", False, "get user", rps=(9000, 9100, 8950)),
        case_doc("close", "postgres", False, "get user", rps=(8900, 9050, 9000)),
        case_doc("broken", "mysql", True, "get user", rps=(), status="verification failed",
                 reason="user fields: GET /user/42/: username differs"),
        case_doc("erratic", "mysql", False, "get user", rps=(20000, 20000, 20000),
                 status="invalid",
                 reason="3.00% of requests failed (threshold 0.10%): status 300"),
        case_doc("fast", "none", False, "plain", rps=(100000, 101000, 99000),
                 warnings=["client-bound: wrk used 99% of its 1 thread(s)' CPU"]),
        case_doc("wobbly", "none", False, "plain", rps=(3000, 4500, 2000)),
        case_doc("fast", "none", False, "to json", rps=(), status="interrupted",
                 reason="run interrupted before this sample was measured"),
    ])
