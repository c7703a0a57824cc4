"""A concurrency sweep (`--connections 16,64,256`), from stored results only: each
variant's median req/s and p99 against the number of connections, for a test measured at
two or more connection levels under otherwise the same load.

Like the suite's levels (bench.report.levels), a view of the rows the tables rank, never
a new measurement: a point is a table row (ok rows only) with its 95 % interval.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.report.levels import variant_label
from bench.report.tables import Row, Table, slug


@dataclass
class SweepSeries:
    """One test's req/s and p99 against connections, at one n, mode, proxy and load
    generator."""
    test: str
    title: str
    connections: list[int]                                # every level measured, ascending
    # variant -> (connections, its ok row), ascending connections
    curves: dict[str, list[tuple[int, Row]]] = field(default_factory=dict)

    @property
    def chart_name(self) -> str:
        """The chart's file under charts/ (bench.report.charts.sweep_chart)."""
        return f"{slug(self.title)}-sweep.png"


SWEEP_EXPLAINED = ("Each cell: median req/s / p99 of one variant at one connection level "
                   "(ok measurements only); the chart adds the 95 % interval of each median.")


def _title(table: Table) -> str:
    load = table.load
    generator = load.get("generator", "wrk")
    extra = [load["connection_mode"]] + ([f"behind {load['proxy']}"]
                                         if load["proxy"] != "none" else []) \
        + ([generator] if generator != "wrk" else [])
    name = table.test if table.n is None else f"{table.test} n={table.n}"
    return f"{name}: req/s and p99 against connections ({', '.join(extra)})"


def sweep_series(tables: list[Table]) -> list[SweepSeries]:
    """A series per test, n, connection mode, proxy and load generator measured at two or
    more connection levels, in the tables' order (the same case closed with wrk, oha and
    k6 is three points of one level, not a sweep); variants with no ok row are left out."""
    out: dict[tuple, SweepSeries] = {}
    for table in tables:
        load = table.load
        key = (table.test, table.n, load["connection_mode"], load["proxy"],
               load.get("generator", "wrk"))
        series = out.setdefault(key, SweepSeries(table.test, _title(table), []))
        series.connections.append(load["connections"])
        for row in table.rows:
            if row.ranked:
                series.curves.setdefault(variant_label(row.server, row.database, row.orm),
                                         []).append((load["connections"], row))
    for series in out.values():
        series.connections.sort()
        for curve in series.curves.values():
            curve.sort(key=lambda point: point[0])
    return [s for s in out.values() if len(s.connections) > 1 and s.curves]


def sweep_cells(series: SweepSeries) -> tuple[list[str], list[list[str]]]:
    """A series as a table: a row per variant, a column per connection level holding the
    median req/s and the p99."""
    def cell(row: Row | None) -> str:
        if row is None:
            return "-"
        p99 = row.latency_ms.get("p99")
        return f"{row.rps.median:,.0f} / " + ("-" if p99 is None else f"{p99:.1f} ms")
    rows = [[name, *[cell(next((r for c, r in curve if c == level), None))
                     for level in series.connections]] for name, curve in series.curves.items()]
    return ["variant", *[f"c={c} req/s / p99" for c in series.connections]], rows
