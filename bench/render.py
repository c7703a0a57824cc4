"""Result tables, built once from a stored results document; each export only changes syntax.

Never re-runs anything. Rows that are not "ok" (errors over the threshold, failed
verification, a server that did not start) are kept, sorted after the ranked rows, with
their reason in place of the figures. Warnings (errors under the threshold, a client-
bound run) become numbered notes under the table.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

from tabulate import tabulate

from bench.config import NO_DB_TESTS, TESTS
from bench.results import OK

HEADERS = ["test_name", "webserver_name", "database", "orm", "req/sec",
           "latency_p50", "latency_p75", "latency_p90", "latency_p99"]
PERCENTILES = ("p50", "p75", "p90", "p99")


@dataclass
class Table:
    test: str
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    client_bound: list[str] = field(default_factory=list)   # servers whose figure wrk limited


def _ms(value: float) -> str:
    return f"{value:.2f} ms"


def _row(case: dict, note_refs: str) -> list[str]:
    no_db = case["test"] in NO_DB_TESTS
    database = "None" if no_db else case["database"]
    orm = "None" if no_db else str(case["orm"])
    head = [case["test"], case["server"], database, orm]
    if case["status"] == OK and case["summary"]:
        s = case["summary"]
        return head + [f"{s['requests_per_sec']:,.0f}{note_refs}"] + \
            [_ms(s["latency_ms"][p]) for p in PERCENTILES]
    reason = case.get("reason") or "no result"
    return head + [f"{case['status']}: {reason}{note_refs}"] + ["-"] * len(PERCENTILES)


def build_tables(doc: dict) -> list[Table]:
    tables = []
    for test in TESTS:
        cases = [c for c in doc["cases"] if c["test"] == test and c["status"] != "pending"]
        if not cases:
            continue
        ranked = sorted((c for c in cases if c["status"] == OK and c["summary"]),
                        key=lambda c: -c["summary"]["requests_per_sec"])
        others = [c for c in cases if c not in ranked]
        table = Table(test)
        for case in ranked + others:
            if case.get("checks", {}).get("client_bound") and case["status"] == OK:
                table.client_bound.append(case["server"])
            refs = ""
            for warning in case.get("warnings", []):
                table.notes.append(f"{case['server']} ({case['database']}, "
                                   f"{'orm' if case['orm'] else 'raw'}): {warning}")
                refs += f" [{len(table.notes)}]"
            table.rows.append(_row(case, refs))
        tables.append(table)
    return tables


def to_markdown(tables: list[Table], doc: dict) -> str:
    s = doc["settings"]
    out = [f"# Results of run {doc['run_id']}", "",
           f"{s['workers']} workers per server, {s['db_connections']} DB connections per server, "
           f"wrk {s['threads']} thread(s) x {s['connections']} connections, "
           f"{s['duration']:g} s measured after {s['warmup']:g} s warm-up; "
           f"machine: {doc['environment'].get('cpu_count')} CPUs "
           f"({doc['environment'].get('cpu_model') or 'unknown CPU'}). Run status: {doc['status']}.",
           ""]
    for table in tables:
        out += [f"## {table.test}", "", tabulate(table.rows, HEADERS, tablefmt="pipe",
                                                 disable_numparse=True), ""]
        if len(table.client_bound) > 1:
            out += [f"Client-bound rows ({', '.join(table.client_bound)}) measure the load "
                    f"generator as much as the server: their order among themselves is not a "
                    f"ranking.", ""]
        if table.notes:
            out += ["Notes:", ""] + [f"{i}. {n}" for i, n in enumerate(table.notes, 1)] + [""]
    return "\n".join(out)


def to_csv(tables: list[Table]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(HEADERS)
    for table in tables:
        writer.writerows(table.rows)
    return buf.getvalue()


EXPORTERS = {"md": lambda tables, doc: to_markdown(tables, doc),
             "csv": lambda tables, doc: to_csv(tables)}
