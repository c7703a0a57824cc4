"""The result tables as data, built once from a stored results document.

Never re-runs anything. Every verdict is recomputed from the stored samples
(`bench.analysis`), so old results are judged by today's rules. Rows are ranked by
median req/s; rows that are not "ok" (errors over the threshold, failed verification, a
server that did not start, an interrupted run) are kept after the ranked rows with their
reason. Each exporter in `bench.report.formats` only changes the syntax of these rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.analysis import statistics
from bench.analysis.statistics import Spread
from bench.core.settings import NO_DB_TESTS, TESTS

CONTRACT_COLUMNS = ["test_name", "webserver_name", "database", "orm", "req/sec",
                    "latency_p50", "latency_p75", "latency_p90", "latency_p99"]
PERCENTILES = ("p50", "p75", "p90", "p99")


@dataclass
class Row:
    test: str
    server: str
    database: str              # "None" for the tests without a database, as the contract says
    orm: str
    status: str
    reason: str | None
    rps: Spread
    latency_ms: dict           # median over samples of each percentile
    tie: bool | None = None    # CI overlaps the ranked row above
    unstable: bool = False
    client_bound: bool = False
    resources: dict = field(default_factory=dict)
    error_rate: float | None = None
    relative: float | None = None      # median / the best ranked median of the table
    notes: list[int] = field(default_factory=list)    # numbers of the table's notes

    @property
    def ranked(self) -> bool:
        return self.status == "ok" and self.rps.median is not None


@dataclass
class Table:
    test: str
    title: str
    load: dict                 # the case key's load parameters shared by the rows
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def client_bound(self) -> list[str]:
        return [r.server for r in self.rows if r.ranked and r.client_bound]

    @property
    def ties(self) -> int:
        return sum(1 for r in self.rows if r.tie)


def _load_params(case: dict) -> tuple:
    key = case["key"]
    return key["connections"], key["connection_mode"], key["generator"]


def _row(case: dict) -> Row:
    stats = case.get("stats") or statistics.summarise_case(case["samples"], 0.10)
    no_db = case["test"] in NO_DB_TESTS
    return Row(test=case["test"], server=case["server"],
               database="None" if no_db else case["database"],
               orm="None" if no_db else str(case["orm"]),
               status=stats["status"], reason=stats["reason"],
               rps=Spread(**stats["requests_per_sec"]), latency_ms=stats["latency_ms"],
               unstable=stats["unstable"], client_bound=stats["client_bound"],
               resources=stats["resources"], error_rate=stats["error_rate"])


def build_tables(doc: dict) -> list[Table]:
    """One table per test and set of load parameters, in the contract's test order."""
    doc = statistics.refresh(doc)
    groups: dict[tuple, list[dict]] = {}
    for case in doc["cases"]:
        if case["status"] == "pending":
            continue
        groups.setdefault((case["test"], *_load_params(case)), []).append(case)
    levels = {k[1:] for k in groups}
    tables = []
    for (test, connections, mode, generator), cases in sorted(
            groups.items(), key=lambda kv: (TESTS.index(kv[0][0]), kv[0][1:])):
        title = test
        if len(levels) > 1:
            title += f" ({connections} connections, {mode}, {generator})"
        table = Table(test, title, {"connections": connections, "connection_mode": mode,
                                    "generator": generator})
        rows = [(_row(c), c) for c in cases]
        ranked = sorted((rc for rc in rows if rc[0].ranked), key=lambda rc: -rc[0].rps.median)
        others = [rc for rc in rows if not rc[0].ranked]
        for row, tie in zip([r for r, _ in ranked], statistics.ties([r.rps for r, _ in ranked])):
            row.tie = tie
            row.relative = row.rps.median / ranked[0][0].rps.median
        for row, case in ranked + others:
            for warning in case.get("warnings", []):
                table.notes.append(f"{row.server} ({case['database']}, "
                                   f"{'orm' if case['orm'] else 'raw'}): {warning}")
                row.notes.append(len(table.notes))
            table.rows.append(row)
        tables.append(table)
    return tables


def header_sentence(doc: dict) -> str:
    """One sentence: what machine and which settings produced the tables."""
    env, s, load = doc["environment"], doc["settings"], doc.get("load") or {}
    git = env.get("git") or {}
    commit = (git.get("commit") or env.get("git_commit") or "unknown")[:10]
    dirty = "+uncommitted changes" if git.get("dirty") else ""
    cpus = env.get("cpu_count")
    usable = env.get("cpus_usable")
    cpu_text = f"{cpus} CPUs" if usable in (None, cpus) else f"{usable} of {cpus} CPUs"
    dbs = ", ".join(f"{e} {(d.get('version') or '?').split(' on ')[0]}"
                    for e, d in doc.get("databases", {}).items())
    mode = next((d.get("mode") for d in doc.get("databases", {}).values()), None)
    samples = s.get("repeat", 1)
    return (f"Measured on {env.get('cpu_model') or 'an unknown CPU'} ({cpu_text}, "
            f"{env.get('memory_gb')} GiB, Linux {env.get('kernel')}): "
            f"{s['workers']} workers and {s['db_connections']} DB connections per server, "
            f"{load.get('generator', 'wrk')} with {load.get('threads')} thread(s) x "
            f"{load.get('connections')} connections, {samples} sample(s) of "
            f"{s['duration']:g} s per case after {s['warmup']:g} s warm-up"
            f"{', preset ' + s['preset'] if s.get('preset') else ''}"
            f"{'; databases: ' + dbs + (' (' + mode + ')') if dbs else ''}; "
            f"commit {commit}{dirty}; run {doc['run_id']}, status {doc['status']}."
            + connections_sentence(doc))


def connections_sentence(doc: dict) -> str:
    """What the databases counted against each server's DB budget after its samples
    ("" for results from before the count was stored)."""
    counted, off = 0, {}
    for case in doc["cases"]:
        for sample in case["samples"]:
            process = sample.get("server_process") or {}
            budget, seen = process.get("db_budget"), process.get("db_connections_seen")
            if budget is None or seen is None:
                continue
            counted += 1
            if seen != budget["total"]:
                key = f"{case['server']} ({case['database']}, {'orm' if case['orm'] else 'raw'})"
                off[key] = f"{key} {seen} of {budget['total']}"
    if not counted:
        return ""
    if not off:
        return (" After every sample the database counted exactly the budget's connections "
                "from the server.")
    return (" Connections the database counted that differ from the budget: "
            + ", ".join(sorted(off.values())) + ".")
