"""Migrations of stored results to the current schema, so every old run still loads,
renders and compares. Each step is a pure function of the document.

Version 1 (one measurement per case) -> version 2 (samples per case): each v1 case
becomes a case with one sample holding its figures. v1 stored the connection count that
was asked for, and the server's RSS rather than PSS; the migrated sample says so.

Version 2 -> version 3 (typed records, bench.storage.document): a sample's load
generator record moves from "wrk" (whichever generator ran) to "generator", and the
generator's name from its "generator" key to "name" ("wrk" when absent: schema 2 stored
the name only once a second generator existed). Keys that schema 2 did not require but
every harness wrote, with a blank value until there was something to say, get that
blank where they are missing (null, [] or {}: nothing recorded); keys without such a
blank stay missing (schema 3 makes them optional). No figure is invented.
"""
from __future__ import annotations

import copy

READABLE = (1, 2, 3)
CURRENT = 3


def case_key(server: str, database: str, orm: bool, test: str, connections: int,
             connection_mode: str = "keep-alive", generator: str = "wrk") -> dict:
    return {"server": server, "database": database, "orm": orm, "test": test,
            "connections": connections, "connection_mode": connection_mode,
            "generator": generator}


def _v1_sample(case: dict, settings: dict) -> dict:
    wrk = case.get("wrk") or {}
    process = case.get("server_process") or {}
    resources = None
    if process.get("cpu_s") is not None:
        duration = (case.get("summary") or {}).get("duration_s") or settings.get("duration") or 1
        resources = {"server": {"cpu_s": process["cpu_s"],
                                "mean_cores": round(process["cpu_s"] / duration, 3),
                                "peak_cores": None, "memory_mean_mb": None,
                                "memory_peak_mb": process.get("rss_mb"), "memory_kind": "rss",
                                "processes": process.get("processes", 0)}}
    return {
        "index": 0, "round": 0, "status": case["status"], "reason": case.get("reason"),
        "warnings": list(case.get("warnings", [])), "started_at": case.get("started_at"),
        "summary": case.get("summary"), "warmup": case.get("warmup"),
        "error_rate": case.get("error_rate"),
        "wrk": {"command": wrk.get("command", []), "exit_code": wrk.get("exit_code"),
                "client_cpu_s": wrk.get("client_cpu_s", 0.0), "wall_s": wrk.get("wall_s", 0.0),
                # schema 1 recorded what was asked for, not what wrk opened
                "threads": settings.get("threads", 1),
                "connections": settings.get("connections", 1),
                "connections_as_asked": True} if wrk else None,
        "resources": resources,
        "server_process": {k: v for k, v in process.items()
                           if k in ("workers", "pool_size", "concurrency")} or None,
        "checks": case.get("checks", {}), "overhead_s": case.get("overhead_s", {}),
        "log": case.get("log"),
    }


def v1_to_v2(doc: dict) -> dict:
    old = copy.deepcopy(doc)
    settings = old["settings"]
    connections = settings.get("connections", 64)
    settings.setdefault("repeat", 1)
    settings.setdefault("preset", None)
    settings.setdefault("unstable_cv", 0.10)
    cases = []
    for c in old["cases"]:
        sample = _v1_sample(c, settings)
        cases.append({
            "id": f"{c['id']}@c{connections}",
            "key": case_key(c["server"], c["database"], c["orm"], c["test"], connections),
            "server": c["server"], "database": c["database"], "orm": c["orm"],
            "test": c["test"], "status": c["status"], "reason": c.get("reason"),
            "warnings": list(c.get("warnings", [])), "stats": None,
            "samples": [sample],
        })
    return {
        "schema_version": 2, "migrated_from": 1,
        "run_id": old["run_id"], "status": old["status"], "reason": old.get("reason"),
        "started_at": old["started_at"], "finished_at": old["finished_at"],
        "settings": settings,
        "load": {"generator": "wrk", "threads": settings.get("threads"),
                 "connections": connections, "connections_requested": connections},
        "environment": old["environment"], "databases": old["databases"],
        "builds": old["builds"], "servers": {}, "verification": old["verification"],
        "schedule": {"order_seed": None, "rounds": 1, "order": [c["id"] for c in cases]},
        "cases": cases,
    }


def _v2_generator(record: dict | None) -> dict | None:
    if record is None:
        return None
    return {"name": record.get("generator", "wrk"),
            **{k: v for k, v in record.items() if k != "generator"}}


# what schema 2 did not require but its writers always wrote, as they wrote it blank
V2_RUN_BLANKS = {"reason": None, "servers": {}}
V2_CASE_BLANKS = {"stats": None}
V2_SAMPLE_BLANKS = {"warnings": [], "started_at": None, "warmup": None, "error_rate": None,
                    "generator": None, "resources": None, "server_process": None,
                    "checks": {}, "overhead_s": {}, "log": None}


def _blanks(record: dict, blanks: dict) -> dict:
    return {**record, **{k: copy.deepcopy(v) for k, v in blanks.items() if k not in record}}


def _v2_sample(sample: dict) -> dict:
    # the same keys in the same order, "wrk" renamed where it stood
    renamed = {("generator" if k == "wrk" else k): (_v2_generator(v) if k == "wrk" else v)
               for k, v in sample.items()}
    return _blanks(renamed, V2_SAMPLE_BLANKS)


def v2_to_v3(doc: dict) -> dict:
    new = _blanks(copy.deepcopy(doc), V2_RUN_BLANKS)
    for name, build in new.get("builds", {}).items():
        new["builds"][name] = _blanks(build, {"error": None})
    for i, case in enumerate(new["cases"]):
        case = new["cases"][i] = _blanks(case, V2_CASE_BLANKS)
        case["samples"] = [_v2_sample(s) for s in case["samples"]]
        for old in case.get("history", []):
            old["samples"] = [_v2_sample(s) for s in old["samples"]]
    head = {"schema_version": 3, "migrated_from": new.get("migrated_from", 2)}
    return {**head, **{k: v for k, v in new.items() if k not in head}}


STEPS = {1: v1_to_v2, 2: v2_to_v3}


def to_current(doc: dict) -> dict:
    """The document at the current schema version (the input is not modified)."""
    version = doc["schema_version"]
    while version < CURRENT:
        doc = STEPS[version](doc)
        version = doc["schema_version"]
    return doc
