"""Migrations of stored results to the current schema, so every old run still loads,
renders and compares. Each step is a pure function of the document.

Version 1 (one measurement per case) -> version 2 (samples per case): each v1 case
becomes a case with one sample holding its figures. v1 stored the connection count that
was asked for, and the server's RSS rather than PSS; the migrated sample says so.
"""
from __future__ import annotations

import copy

READABLE = (1, 2)
CURRENT = 2


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


STEPS = {1: v1_to_v2}


def to_current(doc: dict) -> dict:
    """The document at the current schema version (the input is not modified)."""
    version = doc["schema_version"]
    while version < CURRENT:
        doc = STEPS[version](doc)
        version = doc["schema_version"]
    return doc
