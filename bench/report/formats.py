"""Exporters of the table model: each only changes syntax, never what a row says.

markdown: the contract's columns, for a README or a blog post; csv: the same rows with
the numbers unformatted and the statistics in extra columns; json: everything.
"""
from __future__ import annotations

import csv
import io
import json

from tabulate import tabulate

from bench.report.tables import CONTRACT_COLUMNS, PERCENTILES, Row, Table, header_sentence

TIE_MARK = "≈"


def _fmt(value, spec: str, suffix: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{suffix}"


def _server(row: Row, key: str):
    return (row.resources.get("server") or {}).get(key)


# Columns added on request (--columns), after the contract's: (header, cell, raw value).
EXTRA_COLUMNS = {
    "errors": ("errors", lambda r: _fmt(r.error_rate and r.error_rate * 100, ".3f", " %"),
               lambda r: r.error_rate),
    "spread": ("req/sec 95 % CI",
               lambda r: "-" if r.rps.ci_low is None
               else f"{r.rps.ci_low:,.0f} – {r.rps.ci_high:,.0f}",
               lambda r: None if r.rps.ci_low is None else [r.rps.ci_low, r.rps.ci_high]),
    "cpu": ("server cores", lambda r: _fmt(_server(r, "mean_cores"), ".2f"),
            lambda r: _server(r, "mean_cores")),
    "memory": ("server memory (PSS)", lambda r: _fmt(_server(r, "memory_mb"), ",.0f", " MiB"),
               lambda r: _server(r, "memory_mb")),
    "per-core": ("req per server CPU-s",
                 lambda r: _fmt(r.resources.get("requests_per_server_cpu_s"), ",.0f"),
                 lambda r: r.resources.get("requests_per_server_cpu_s")),
    "relative": ("vs best", lambda r: _fmt(r.relative and r.relative * 100, ".1f", " %"),
                 lambda r: r.relative),
}
STATS_COLUMNS = ["status", "reason", "samples", "req_sec_cv", "req_sec_ci95_low",
                 "req_sec_ci95_high", "tie_with_row_above", "unstable", "client_bound"]


def _rps_cell(row: Row) -> str:
    refs = "".join(f" [{n}]" for n in row.notes)
    if not row.ranked:
        return f"{row.status}: {row.reason or 'no result'}{refs}"
    text = f"{row.rps.median:,.0f}"
    if row.rps.cv is not None:
        text += f" ± {row.rps.cv * 100:.1f} %"
    if row.tie:
        text = f"{TIE_MARK} {text}"
    return text + refs


def _latency_cells(row: Row) -> list[str]:
    if not row.ranked:
        return ["-"] * len(PERCENTILES)
    return [f"{row.latency_ms[p]:.2f} ms" if row.latency_ms.get(p) is not None else "-"
            for p in PERCENTILES]


def markdown_rows(table: Table, extra: list[str] = ()) -> list[list[str]]:
    return [[r.test, r.server, r.database, r.orm, _rps_cell(r), *_latency_cells(r),
             *[EXTRA_COLUMNS[c][1](r) if r.ranked else "-" for c in extra]]
            for r in table.rows]


def headers(extra: list[str] = ()) -> list[str]:
    return CONTRACT_COLUMNS + [EXTRA_COLUMNS[c][0] for c in extra]


def to_markdown(tables: list[Table], doc: dict, extra: list[str] = ()) -> str:
    out = [f"# Results of run {doc['run_id']}", "", header_sentence(doc), ""]
    repeat = doc["settings"].get("repeat", 1)
    if repeat > 1:
        out += [f"req/sec is the median of {repeat} samples ± their coefficient of variation; "
                f"latencies are the medians of the samples' percentiles. {TIE_MARK} marks a "
                f"statistical tie with the row above (the 95 % confidence intervals of the "
                f"two medians overlap): the data does not support ordering those two rows.", ""]
    else:
        out += ["One sample per case: no spread and no confidence interval, so the order "
                "of close rows is not tested (use --repeat or a preset).", ""]
    for table in tables:
        out += [f"## {table.title}", "", tabulate(markdown_rows(table, extra), headers(extra),
                                                  tablefmt="pipe", disable_numparse=True), ""]
        if len(table.client_bound) > 1:
            out += [f"Client-bound rows ({', '.join(table.client_bound)}) measure the load "
                    f"generator as much as the server: their order among themselves is not a "
                    f"ranking.", ""]
        if table.notes:
            out += ["Notes:", ""] + [f"{i}. {n}" for i, n in enumerate(table.notes, 1)] + [""]
    return "\n".join(out)


def _number(value) -> str:
    return "" if value is None else f"{value:.6g}"


def csv_rows(tables: list[Table], extra: list[str] = ()) -> list[list[str]]:
    rows = []
    for table in tables:
        for r in table.rows:
            ok = r.ranked
            rows.append([r.test, r.server, r.database, r.orm,
                         _number(r.rps.median if ok else None),
                         *[_number(r.latency_ms.get(p) if ok else None) for p in PERCENTILES],
                         r.status, r.reason or "", str(r.rps.n), _number(r.rps.cv),
                         _number(r.rps.ci_low), _number(r.rps.ci_high),
                         "" if r.tie is None else str(r.tie), str(r.unstable),
                         str(r.client_bound),
                         *[_csv_value(EXTRA_COLUMNS[c][2](r)) if ok else "" for c in extra]])
    return rows


def _csv_value(value) -> str:
    if isinstance(value, list):
        return " ".join(_number(v) for v in value)
    return _number(value)


def to_csv(tables: list[Table], doc: dict | None = None, extra: list[str] = ()) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CONTRACT_COLUMNS + STATS_COLUMNS + [EXTRA_COLUMNS[c][0] for c in extra])
    writer.writerows(csv_rows(tables, extra))
    return buf.getvalue()


def to_json(tables: list[Table], doc: dict, extra: list[str] = ()) -> str:
    return json.dumps({
        "run_id": doc["run_id"], "status": doc["status"], "header": header_sentence(doc),
        "tables": [{
            "test": t.test, "title": t.title, "load": t.load, "notes": t.notes,
            "rows": [{"test": r.test, "server": r.server, "database": r.database, "orm": r.orm,
                      "status": r.status, "reason": r.reason,
                      "requests_per_sec": r.rps.as_dict(), "latency_ms": r.latency_ms,
                      "tie_with_row_above": r.tie, "unstable": r.unstable,
                      "client_bound": r.client_bound, "resources": r.resources,
                      "error_rate": r.error_rate, "relative_to_best": r.relative,
                      "notes": r.notes} for r in t.rows]}
            for t in tables]}, indent=2) + "\n"


EXPORTERS = {"md": to_markdown, "csv": to_csv, "json": to_json}
