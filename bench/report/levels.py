"""The database suite across its levels, from stored results only: req/s against n for a
test measured at several n, and the cache's speed-up over `queries` at the same n.

Both are views of the same rows the tables rank (bench.report.tables), never new
measurements: a point is a table row's median req/s with its 95 % interval, and only ok
rows make points, as in the charts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.analysis import statistics
from bench.analysis.compare import ratio_ci
from bench.analysis.figures import RPS, ok_values
from bench.report.tables import Row, Table, describe_load, level, load_params, slug


def variant_label(server: str, database: str, orm) -> str:
    """"fast (postgres, raw)": one server variant, as the notes and knees name it."""
    return f"{server} ({database}, {'orm' if orm in (True, 'True') else 'raw'})"


@dataclass
class LevelSeries:
    """One test's median req/s against n at one set of load parameters."""
    test: str
    title: str
    load: dict
    levels: list[int]                                     # every n measured, ascending
    curves: dict[str, list[Row]] = field(default_factory=dict)   # variant -> ok rows by n

    @property
    def chart_name(self) -> str:
        """The chart's file under charts/ (bench.report.charts.level_chart)."""
        return f"{slug(self.title)}-levels.png"


def _load_text(load: dict, several: bool) -> str:
    if not several:
        return ""
    return f" ({describe_load(load['connections'], load['connection_mode'], load['proxy'])})"


def level_series(tables: list[Table]) -> list[LevelSeries]:
    """A series per test of the suite measured at two or more n (and per load point),
    in the tables' order."""
    loads = {tuple(t.load.values()) for t in tables}
    out: dict[tuple, LevelSeries] = {}
    for table in tables:
        if table.n is None:
            continue
        key = (table.test, tuple(table.load.values()))
        series = out.setdefault(key, LevelSeries(
            table.test, f"{table.test}: req/s against n{_load_text(table.load, len(loads) > 1)}",
            table.load, []))
        series.levels.append(table.n)
        for row in table.rows:
            if row.ranked:
                series.curves.setdefault(variant_label(row.server, row.database, row.orm),
                                         []).append(row)
    for series in out.values():
        series.levels.sort()
        for rows in series.curves.values():
            rows.sort(key=lambda r: r.n)
    return [s for s in out.values() if len(s.levels) > 1 and s.curves]


@dataclass
class Speedup:
    """cached / queries for one variant at one n and load point (both ok)."""
    variant: str
    n: int
    load: dict
    cached: float               # median req/s
    queries: float
    ratio: float                # cached / queries
    ci: tuple[float, float] | None   # 95 % bootstrap interval of the ratio of medians


def cache_speedups(doc: dict) -> list[Speedup]:
    """Per variant, n and load point where `cached` and `queries` both ran ok: the ratio
    of their median req/s, with the 95 % percentile-bootstrap interval of that ratio of
    medians (each side's samples resampled independently, as `compare` does; none with
    fewer than two samples a side)."""
    doc = statistics.refresh(doc)
    found: dict[tuple, dict[str, dict]] = {}
    for case in doc["cases"]:
        if case["test"] not in ("cached", "queries") or case["status"] != "ok" \
                or case["key"].get("rate") is not None:
            continue
        key = (variant_label(case["server"], case["database"], case["orm"]), level(case),
               load_params(case))
        found.setdefault(key, {})[case["test"]] = case
    out = []
    for (variant, n, (connections, mode, proxy)), pair in found.items():
        if len(pair) < 2:
            continue
        cached, queries = (pair[t]["stats"]["requests_per_sec"]["median"]
                           for t in ("cached", "queries"))
        if not cached or not queries:
            continue
        out.append(Speedup(variant, n, {"connections": connections, "connection_mode": mode,
                                        "proxy": proxy}, cached, queries, cached / queries,
                           ratio_ci(ok_values(pair["queries"], RPS),
                                    ok_values(pair["cached"], RPS))))
    return sorted(out, key=lambda s: (tuple(s.load.values()), s.n or 0, -s.ratio))


SPEEDUP_EXPLAINED = (
    "cache speed-up: median req/s of `cached` / median req/s of `queries` at the same n and "
    "load, per server variant (both ok); the interval is the 95 % percentile-bootstrap "
    "interval of that ratio of medians, each test's samples resampled independently (as "
    "`compare` does), none with fewer than two samples a side.")


def speedup_table(doc: dict) -> tuple[list[str], list[list[str]]] | None:
    """The speed-ups as a table (headers, rows), a load column only when the run had
    several load points; None when no variant ran both tests ok."""
    speedups = cache_speedups(doc)
    if not speedups:
        return None
    several = len({tuple(s.load.values()) for s in speedups}) > 1
    return speedup_headers(several), [speedup_cells(s, several) for s in speedups]


def speedup_cells(s: Speedup, with_load: bool) -> list[str]:
    ci = "" if s.ci is None else f" [{s.ci[0]:.2f} – {s.ci[1]:.2f}]"
    load = [describe_load(s.load["connections"], s.load["connection_mode"], s.load["proxy"])] \
        if with_load else []
    return [s.variant, str(s.n), *load, f"{s.cached:,.0f}",
            f"{s.queries:,.0f}", f"{s.ratio:.2f}×{ci}"]


def speedup_headers(with_load: bool) -> list[str]:
    return ["variant", "n", *(["load"] if with_load else []), "cached req/sec",
            "queries req/sec", "speed-up [95 % CI]"]


def level_cells(series: LevelSeries) -> tuple[list[str], list[list[str]]]:
    """A series as a table: a row per variant, a column per n (median req/s, its 95 %
    interval when there is one)."""
    def cell(row: Row | None) -> str:
        if row is None:
            return "-"
        if row.rps.ci_low is None:
            return f"{row.rps.median:,.0f}"
        return f"{row.rps.median:,.0f} [{row.rps.ci_low:,.0f} – {row.rps.ci_high:,.0f}]"
    rows = [[name, *[cell(next((r for r in curve if r.n == n), None)) for n in series.levels]]
            for name, curve in series.curves.items()]
    return ["variant", *[f"n={n}" for n in series.levels]], rows
