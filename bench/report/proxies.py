"""What each reverse proxy costs (`--behind none,nginx,haproxy,caddy`), from stored
results only: for every variant and test measured directly and behind one or more
proxies under otherwise the same load, each proxy's req/s as a share of the direct
figure and the p99 it adds, all from the same run.

Like the concurrency sweep (bench.report.sweep), a view of the rows the tables rank,
never a new measurement: a cell is a table row (ok rows only).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.core.settings import NO_PROXY
from bench.report.levels import variant_label
from bench.report.tables import Row, Table

PROXY_COST_EXPLAINED = (
    "Each proxy's cell: its median req/s as a share of the same variant's direct median in "
    "this run, then its p99 and how much it adds to the direct p99 (ok measurements only; "
    "- where either side has none). The proxy shares the machine with the server, the "
    "database and the load generator, so a share also counts the CPU the proxy takes from "
    "the server.")


@dataclass
class ProxyCost:
    """One test at one load, measured directly and behind each of `proxies`."""
    test: str
    title: str
    proxies: list[str]                                    # in the run's --behind order
    # variant -> proxy ("none" for direct) -> its ok row
    rows: dict[str, dict[str, Row]] = field(default_factory=dict)


def _title(table: Table) -> str:
    load = table.load
    name = table.test if table.n is None else f"{table.test} n={table.n}"
    return (f"{name}: what each proxy costs ({load['connections']} connections, "
            f"{load['connection_mode']})")


def _label(row: Row) -> str:
    """The variant; a test without a database (database "None") names the server only."""
    return row.server if row.database == "None" else variant_label(row.server, row.database, row.orm)


def proxy_costs(tables: list[Table]) -> list[ProxyCost]:
    """A ProxyCost per test, n, connections and connection mode measured directly and
    behind at least one proxy, in the tables' order; variants never measured directly
    (nothing to compare with) are left out."""
    out: dict[tuple, ProxyCost] = {}
    for table in tables:
        load = table.load
        key = (table.test, table.n, load["connections"], load["connection_mode"])
        cost = out.setdefault(key, ProxyCost(table.test, _title(table), []))
        if load["proxy"] != NO_PROXY and load["proxy"] not in cost.proxies:
            cost.proxies.append(load["proxy"])
        for row in table.rows:
            if row.ranked and not row.reference:
                cost.rows.setdefault(_label(row), {})[load["proxy"]] = row
    for cost in out.values():
        cost.rows = {name: by_proxy for name, by_proxy in cost.rows.items()
                     if NO_PROXY in by_proxy}
    return [c for c in out.values() if c.proxies and c.rows]


def proxy_cost_cells(cost: ProxyCost) -> tuple[list[str], list[list[str]]]:
    """A row per variant: the direct req/s and p99, then a cell per proxy."""
    def p99(row: Row) -> float | None:
        return row.latency_ms.get("p99")

    def cell(direct: Row, behind: Row | None) -> str:
        if behind is None:
            return "-"
        share = f"{behind.rps.median / direct.rps.median:.0%}"
        if p99(behind) is None or p99(direct) is None:
            return f"{share} / -"
        return f"{share} / {p99(behind):.1f} ms ({p99(behind) - p99(direct):+.1f})"

    rows = []
    for name, by_proxy in cost.rows.items():
        direct = by_proxy[NO_PROXY]
        head = f"{direct.rps.median:,.0f} / " + ("-" if p99(direct) is None
                                                 else f"{p99(direct):.1f} ms")
        rows.append([name, head, *[cell(direct, by_proxy.get(p)) for p in cost.proxies]])
    return ["variant", "direct req/s / p99", *[f"behind {p}: share / p99 (added)"
                                               for p in cost.proxies]], rows
