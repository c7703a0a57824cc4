"""A results document built the way the runner builds one, with a mix of outcomes."""
import pytest

from bench import results
from bench.config import Settings


def summary(rps: float, p50: float, errors: int = 0, requests: int = 10_000) -> dict:
    return {"requests": requests, "duration_s": 10.0, "requests_per_sec": rps, "bytes": 1,
            "latency_ms": {"min": 0.1, "mean": p50, "stdev": 0.1, "max": p50 * 5, "p50": p50,
                           "p75": p50 * 1.2, "p90": p50 * 1.5, "p99": p50 * 3, "p99_9": p50 * 4},
            "errors": {"connect": 0, "read": 0, "write": 0, "status": errors, "timeout": 0,
                       "total": errors}}


def case(server, database, orm, test, status="ok", rps=1000.0, reason=None, warnings=()):
    return {"id": f"{server}/{database}/{'orm' if orm else 'raw'}/{test.replace(' ', '_')}",
            "server": server, "database": database, "orm": orm, "test": test, "status": status,
            "reason": reason, "warnings": list(warnings),
            "summary": summary(rps, 1000 / rps) if status in ("ok", "invalid") else None,
            "warmup": None, "error_rate": 0.0, "wrk": None, "server_process": None,
            "checks": {}, "overhead_s": {"restore": 0.03, "start_to_ready": 0.2, "stop": 0.1,
                                         "total": 0.33}, "log": None}


@pytest.fixture
def sample_doc():
    doc = results.new_document("20260101T000000Z-test", Settings().public(),
                               {"hostname": "test", "cpu_count": 2, "cpu_model": "x"})
    doc["cases"] = [
        case("slow", "postgres", False, "get user", rps=500),
        case("fast", "postgres", False, "get user", rps=9000),
        case("broken", "mysql", True, "get user", status="verification failed",
             reason="user fields: GET /user/42/: username differs"),
        case("erratic", "mysql", False, "get user", status="invalid", rps=20000,
             reason="3.00% of requests failed (threshold 0.10%): status 300"),
        case("fast", "none", False, "plain", rps=100000,
             warnings=["client-bound: wrk used 99% of its 1 thread(s)' CPU"]),
        case("slow", "none", False, "plain", rps=3000),
        case("fast", "none", False, "to json", status="interrupted",
             reason="run interrupted before this case finished"),
    ]
    return doc
