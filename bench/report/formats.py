"""Exporters of the table model: each only changes syntax, never what a row says.

markdown: the contract's columns, for a README or a blog post; csv: the same rows with
the numbers unformatted and the statistics in extra columns; json: everything.
"""
from __future__ import annotations

import csv
import dataclasses
import io
import json

from tabulate import tabulate

from bench.analysis.latency import MERGED
from bench.core.conformance import cell as conformance_cell
from bench.report import cost, footprint, instructions, levels, mix, protocols, proxies, \
    releases, sweep
from bench.storage.results import VERIFICATION_REPORT
from bench.report.tables import CONTRACT_COLUMNS, PERCENTILES, RateTable, Row, Table, \
    header_sentence

CEILING_COLUMN = "of ceiling"
RATE_PERCENTILES = ("p50", "p90", "p99", "p99_9")
RATE_COLUMNS = ["test_name", "webserver_name", "database", "orm", "rate asked",
                "req/sec achieved", "not sent", "latency_p50", "latency_p90", "latency_p99",
                "latency_p99.9", "status"]

TIE_MARK = "≈"
LEVEL_COLUMN = "n"     # the suite's rows per request, in csv/json only when a run has levels


def has_levels(tables: list, rates: list = ()) -> bool:
    """Whether any table holds suite cases with an n: older runs render as they did."""
    return any(t.n is not None for t in [*tables, *rates])


def _level(n: int | None) -> str:
    return "" if n is None else str(n)


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
    "cost": ("CPU-µs/req server / db / proxy / generator (machine)",
             lambda r: cost_cell(r.resources), lambda r: cost_values(r.resources)),
    "conformance": ("HTTP conformance", lambda r: conformance_cell(r.conformance),
                    lambda r: conformance_cell(r.conformance) if r.conformance else None),
}
# extra columns left out of a run none of whose rows has their figure (a run from before
# they existed renders as it did)
ONLY_WITH_DATA = {"conformance", "cost"}


def cost_values(resources: dict) -> list | None:
    """CPU-µs per request of server, database, proxy, generator and the whole machine
    (bench.analysis.statistics.cost_summary), None for a run that did not measure them."""
    cost = (resources or {}).get("cost")
    if not cost:
        return None
    return [(cost.get(role) or {}).get("cpu_us_per_request")
            for role in ("server", "database", "proxy", "client")] + \
        [cost.get("machine_cpu_us_per_request")]


def cost_cell(resources: dict) -> str:
    values = cost_values(resources)
    if values is None:
        return "-"
    *roles, machine = [_fmt(v, ",.0f") for v in values]
    return " / ".join(roles) + f" ({machine})"


STATS_COLUMNS = ["status", "reason", "samples", "req_sec_cv", "req_sec_ci95_low",
                 "req_sec_ci95_high", "tie_with_row_above", "unstable", "client_bound",
                 "connections", "connection_mode", "proxy", "reference", "of_ceiling"]


def shown_extra(tables: list[Table], extra: list[str]) -> list[str]:
    return [c for c in extra if c not in ONLY_WITH_DATA
            or any(EXTRA_COLUMNS[c][2](r) is not None for t in tables for r in t.rows)]


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


def _server_cell(row: Row) -> str:
    return f"{row.server} (reference)" if row.reference else row.server


def _ceiling_cell(row: Row) -> str:
    return _fmt(row.of_ceiling and row.of_ceiling * 100, ".1f", " %")


def markdown_rows(table: Table, extra: list[str] = ()) -> list[list[str]]:
    return [[r.test, _server_cell(r), r.database, r.orm, _rps_cell(r), *_latency_cells(r),
             *([_ceiling_cell(r)] if table.ceiling else []),
             *[EXTRA_COLUMNS[c][1](r) if r.ranked else "-" for c in extra]]
            for r in table.rows]


def headers(extra: list[str] = (), ceiling: bool = False) -> list[str]:
    return CONTRACT_COLUMNS + ([CEILING_COLUMN] if ceiling else []) + \
        [EXTRA_COLUMNS[c][0] for c in extra]


def rate_cells(row) -> list[str]:
    asked = "-" if row.asked is None else f"{row.asked:,.0f} req/s"
    if row.rate.endswith("%"):
        asked += f" ({row.rate})"
    status = row.status if row.status == "ok" else f"{row.status}: {row.reason or ''}"
    return [row.test, row.server, row.database, row.orm, asked,
            _fmt(row.achieved, ",.0f") + (" (knee)" if row.knee else ""),
            _fmt(row.not_sent, ",d"),
            *[_fmt(row.latency_ms.get(p), ".2f", " ms") for p in RATE_PERCENTILES], status]


# open-model columns of runs whose oha dumps were read (bench.load.oha_dump)
LATE_COLUMNS = ["late", "latency_p99 from send"]


def _has_late(table: RateTable) -> bool:
    return any(r.late is not None for r in table.rows)


def _late_cells(row) -> list[str]:
    return [_fmt(row.late, ",d"), _fmt((row.latency_uncorrected_ms or {}).get("p99"),
                                       ".2f", " ms")]


def rate_markdown(table: RateTable) -> list[str]:
    late = _has_late(table)
    cells = [rate_cells(r)[:-1] + (_late_cells(r) if late else []) + rate_cells(r)[-1:]
             for r in table.rows]
    heads = RATE_COLUMNS[:-1] + (LATE_COLUMNS if late else []) + RATE_COLUMNS[-1:]
    out = [f"## {table.title}", "", tabulate(cells, heads, tablefmt="pipe",
                                             disable_numparse=True), ""]
    out += [f"Latency is measured from each request's intended send time (oha "
            f"--latency-correction), so a stalled server cannot hide the requests it delayed. "
            f"The knee is the highest rate whose p99 stays under {table.bound_ms:g} ms "
            f"(--knee-p99):", ""]
    out += [f"- {name}: " + (f"{rate:,.0f} req/s" if rate else
                              f"none (p99 over {table.bound_ms:g} ms at the lowest rate, or "
                              f"that rate was not reached)")
            + (" (the highest rate measured: p99 stayed under the bound at every point, so "
               "the knee lies beyond it)" if name in table.knee_beyond else "")
            for name, rate in table.knees.items()]
    if late:
        tolerance = next(r.late_tolerance_ms for r in table.rows if r.late is not None)
        out += ["", f"late: responses oha sent more than {tolerance or 0:g} ms after "
                f"their intended send time (no free connection, or oha itself behind), "
                f"summed over the samples; latency_p99 from send: the p99 timed from the "
                f"real send instead (not corrected for coordinated omission), the median "
                f"over the samples."]
    return out + [""]


def to_markdown(tables: list[Table], doc: dict, extra: list[str] = (),
                rates: list[RateTable] = ()) -> str:
    extra = shown_extra(tables, extra)
    out = [f"# Results of run {doc['run_id']}", "", header_sentence(doc), ""]
    out += verification_sentence(doc)
    repeat = doc["settings"].get("repeat", 1)
    if repeat > 1:
        out += [f"req/sec is the median of {repeat} samples ± their coefficient of variation; "
                f"latencies are {latency_phrase(tables)}. {TIE_MARK} marks a "
                f"statistical tie with the row above (the 95 % confidence intervals of the "
                f"two medians overlap): the data does not support ordering those two rows.", ""]
    else:
        out += ["One sample per case: no spread and no confidence interval, so the order "
                "of close rows is not tested (use --repeat or a preset).", ""]
    for table in tables:
        out += [f"## {table.title}", "", tabulate(markdown_rows(table, extra),
                                                  headers(extra, bool(table.ceiling)),
                                                  tablefmt="pipe", disable_numparse=True), ""]
        if table.ceiling:
            out += [f"{CEILING_COLUMN}: each row's req/sec as a share of {table.ceiling}'s, a "
                    f"reference server that does the least possible work per request, measured "
                    f"in the same run under the same load: what the machine can do at all."
                    + (f" Here {table.ceiling} itself is client-bound: the load generator, not "
                       f"the server, set the ceiling, so rows near 100 % are limited by the "
                       f"client too and their order among themselves is not a ranking."
                       if table.ceiling_client_bound else ""), ""]
        if len(table.client_bound) > 1:
            out += [f"Client-bound rows ({', '.join(table.client_bound)}) measure the load "
                    f"generator as much as the server: their order among themselves is not a "
                    f"ranking.", ""]
        if table.notes:
            out += ["Notes:", ""] + [f"{i}. {n}" for i, n in enumerate(table.notes, 1)] + [""]
    out += levels_markdown(tables, doc)
    out += sweep_markdown(tables)
    out += [line for series in releases.release_series(tables, doc.get("settings", {}))
            for line in _series_markdown(series.title, *releases.release_cells(series),
                                         releases.EXPLAINED, series.chart_name)]
    out += proxy_cost_markdown(tables)
    out += protocol_markdown(doc)
    for table in rates:
        out += rate_markdown(table)
    out += mix.mix_markdown(doc)
    out += instructions.instructions_markdown(doc)
    if "cost" in extra:             # closed-loop and fixed-rate cases alike
        out += cost.cost_markdown(doc) + footprint.footprint_markdown(doc)
    return "\n".join(out)


def verification_sentence(doc: dict) -> list[str]:
    """Where the reader finds what each variant was checked for, before its figures; a
    run stored without verification reports says its numbers are unverified (or
    nothing, for results from before the reports were stored)."""
    reports = doc.get("verification") or {}
    if not reports:
        if doc["settings"].get("verify") is False:
            return ["Not verified (--no-verify): these figures were measured without the "
                    "contract's checks.", ""]
        return []
    passed = sum(1 for r in reports.values() if r.get("passed"))
    return [f"Verification: {passed} of {len(reports)} variants passed the contract's "
            f"checks before any load; every check with its measured figures: "
            f"[{VERIFICATION_REPORT}]({VERIFICATION_REPORT}).", ""]


def sweep_markdown(tables: list[Table]) -> list[str]:
    """A concurrency sweep's view: req/s and p99 against connections; nothing without one."""
    return [line for series in sweep.sweep_series(tables)
            for line in _series_markdown(series.title, *sweep.sweep_cells(series),
                                         sweep.SWEEP_EXPLAINED, series.chart_name)]


def proxy_cost_markdown(tables: list[Table]) -> list[str]:
    """What each --behind proxy costs against direct, in the same run; nothing without."""
    out = []
    for item in proxies.proxy_costs(tables):
        heads, rows = proxies.proxy_cost_cells(item)
        out += [f"## {item.title}", "", tabulate(rows, heads, tablefmt="pipe",
                                                 disable_numparse=True), ""]
    return out + [proxies.PROXY_COST_EXPLAINED, ""] if out else []


def protocol_markdown(doc: dict) -> list[str]:
    """What TLS costs and what HTTP/2 gives, against h1 in the same run; nothing without."""
    out = []
    for table in protocols.protocol_effects(doc):
        out += [f"## {table.title}", "", tabulate(protocols.effect_cells(table)[1],
                                                  protocols.HEADERS, tablefmt="pipe",
                                                  disable_numparse=True), "",
                f"{protocols.EXPLAINED[table.kind]} Chart: charts/{table.chart_name} "
                f"(written with report.html).", ""]
    return out


def _series_markdown(title: str, heads: list[str], rows: list[list[str]], explained: str,
                     chart_name: str) -> list[str]:
    """A series across a load dimension (n, connections) as a section: its table, what
    a cell holds, and the chart report.html draws of it."""
    return [f"## {title}", "", tabulate(rows, heads, tablefmt="pipe", disable_numparse=True),
            "", f"{explained} Chart: charts/{chart_name} (written with report.html).", ""]


def has_histograms(tables: list) -> bool:
    """Whether any row's latency comes from merged histograms: older runs render as
    they did."""
    return any(r.latency_source == MERGED for t in tables for r in t.rows)


def latency_phrase(tables: list[Table]) -> str:
    rows = [r for t in tables for r in t.rows if r.ranked]
    merged = sum(r.latency_source == MERGED for r in rows)
    old = "the medians of the samples' percentiles"
    if not merged:
        return old
    new = ("read from the samples' latency histograms merged into one per case (HDR, 3 "
           "significant digits)")
    return new if merged == len(rows) else f"{new} where every sample has one, else {old}"


def levels_markdown(tables: list[Table], doc: dict) -> list[str]:
    """The suite's views across n: req/s against n (with the chart report.html draws) and
    the cache's speed-up over queries; nothing for a run without them."""
    out = []
    for series in levels.level_series(tables):
        out += _series_markdown(series.title, *levels.level_cells(series),
                                "Median req/s [95 % interval of the median] per n.",
                                series.chart_name)
    speedup = levels.speedup_table(doc)
    if speedup:
        out += ["## cache speed-up", "", tabulate(speedup[1], speedup[0], tablefmt="pipe",
                                                  disable_numparse=True), "",
                levels.SPEEDUP_EXPLAINED, ""]
    return out


def _number(value) -> str:
    return "" if value is None else f"{value:.6g}"


def csv_rows(tables: list[Table], extra: list[str] = (),
             with_level: bool = False) -> list[list[str]]:
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
                         str(r.client_bound), str(table.load["connections"]),
                         table.load["connection_mode"], table.load.get("proxy", "none"),
                         str(r.reference), _number(r.of_ceiling),
                         *([_level(r.n)] if with_level else []),
                         *[_csv_value(EXTRA_COLUMNS[c][2](r)) if ok else "" for c in extra]])
    return rows


def _csv_value(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(_number(v) for v in value)
    return _number(value)


def to_csv(tables: list[Table], doc: dict | None = None, extra: list[str] = (),
           rates: list[RateTable] = ()) -> str:
    """The closed-loop rows; then, after a blank line, the open-model points (their own
    columns) when there are any."""
    extra = shown_extra(tables, extra)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    leveled = has_levels(tables, rates)
    level_column = [LEVEL_COLUMN] if leveled else []
    writer.writerow(CONTRACT_COLUMNS + STATS_COLUMNS + level_column
                    + [EXTRA_COLUMNS[c][0] for c in extra])
    writer.writerows(csv_rows(tables, extra, leveled))
    if rates:
        writer.writerow([])
        writer.writerow(["test_name", "webserver_name", "database", "orm", "connections",
                         "connection_mode", "proxy", "rate", "rate_asked", "req_sec_achieved",
                         "not_sent", *[f"latency_{p}" for p in RATE_PERCENTILES], "status",
                         "reason", "knee", *level_column])
        for t in rates:
            writer.writerows([[r.test, r.server, r.database, r.orm, str(t.load["connections"]),
                               t.load["connection_mode"], t.load["proxy"], r.rate,
                               _number(r.asked), _number(r.achieved),
                               "" if r.not_sent is None else str(r.not_sent),
                               *[_number(r.latency_ms.get(p)) for p in RATE_PERCENTILES],
                               r.status, r.reason or "", str(r.knee),
                               *([_level(r.n)] if leveled else [])] for r in t.rows])
    return buf.getvalue()


def _with_level(data: dict, n: int | None, leveled: bool) -> dict:
    """`n` in a JSON table or row of a run with suite levels (None for the other tests);
    left out for older runs, whose JSON stays as it was."""
    if leveled:
        data[LEVEL_COLUMN] = n
    else:
        data.pop(LEVEL_COLUMN, None)
    return data


def _conformance(row: Row) -> dict:
    """The row's HTTP conformance verdicts, for a run that recorded them."""
    return {} if row.conformance is None else {"conformance": row.conformance}


def _latency_json(row: Row, merged: bool) -> dict:
    """Where a row's latency comes from and its intervals, in runs with histograms."""
    if not merged:
        return {}
    return {"latency_source": row.latency_source, "latency_ci_ms": row.latency_ci_ms}


def _rate_json(row) -> dict:
    data = dataclasses.asdict(row)
    if row.late is None:            # a run from before oha's dumps were read, as it was
        del data["late"], data["late_tolerance_ms"], data["latency_uncorrected_ms"]
    return data


def to_json(tables: list[Table], doc: dict, extra: list[str] = (),
            rates: list[RateTable] = ()) -> str:
    leveled = has_levels(tables, rates)
    merged = has_histograms(tables)
    data = {
        "run_id": doc["run_id"], "status": doc["status"], "header": header_sentence(doc),
        "tables": [_with_level({
            "test": t.test, "title": t.title, "load": t.load, "notes": t.notes,
            "rows": [_with_level({"test": r.test, "server": r.server, "database": r.database,
                                  "orm": r.orm,
                      "status": r.status, "reason": r.reason,
                      "requests_per_sec": r.rps.as_dict(), "latency_ms": r.latency_ms,
                      "tie_with_row_above": r.tie, "unstable": r.unstable,
                      "client_bound": r.client_bound, "resources": r.resources,
                      "error_rate": r.error_rate, "relative_to_best": r.relative,
                      "reference": r.reference, "of_ceiling": r.of_ceiling,
                      "notes": r.notes, **_conformance(r), **_latency_json(r, merged)},
                     r.n, leveled) for r in t.rows],
            "ceiling": t.ceiling}, t.n, leveled) for t in tables],
        "rate_tables": [_with_level({"test": t.test, "title": t.title, "load": t.load,
                                     "knee_p99_ms": t.bound_ms, "knees": t.knees,
                                     "rows": [_with_level(_rate_json(r), r.n, leveled)
                                              for r in t.rows]}, t.n, leveled)
                        for t in rates]}
    if leveled:
        data["cache_speedups"] = [dataclasses.asdict(s) for s in levels.cache_speedups(doc)]
    return json.dumps(data, indent=2) + "\n"


EXPORTERS = {"md": to_markdown, "csv": to_csv, "json": to_json}
