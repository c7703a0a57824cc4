"""A release sweep (`--dep NAME=V1,V2`), from stored results only: each framework's
median req/s and p99 against the versions of the swept dependency, in the order the
sweep listed them, per test and variant.

A view of the rows the tables rank (bench.report.tables), never a new measurement: a
point is an ok table row with its 95 % interval; a version that failed its build or
its verification has no point and its cell says why.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.report.tables import Row, Table, slug

EXPLAINED = ("Each cell: median req/s / p99 of the framework's own code run against one "
             "release of the dependency (its environment built with that pin, verified "
             "against the contract first); the last column: the newest listed release "
             "against the first, in req/s. Only ok measurements make points.")


@dataclass
class ReleaseSeries:
    """One framework variant's test across the releases of one dependency."""
    server: str                  # the framework's id
    dependency: str
    versions: list[str]          # as the sweep listed them
    test: str
    title: str
    # variant "database, raw|orm" -> version -> its row (ok or not)
    rows: dict[str, dict[str, Row]] = field(default_factory=dict)

    @property
    def chart_name(self) -> str:
        return f"{slug(self.title)}-releases.png"


def swept_versions(settings: dict) -> dict[str, list[str]]:
    """{dependency: [versions as listed]} of the run's --dep flags."""
    out = {}
    for item in settings.get("deps") or ():
        name, _, values = item.partition("=")
        out[name] = [v.strip() for v in values.split(",")]
    return out


def release_of(label: str, swept: dict[str, list[str]]) -> tuple[str, str, str] | None:
    """(framework id, dependency, version) of a row's server label "id@NAME=V" (other
    parts of the label, a --server-env's, stay in the id); None if it is no release."""
    server, at, arm = label.partition("@")
    if not at:
        return None
    parts = arm.split(",")
    for i, part in enumerate(parts):
        name, _, version = part.partition("=")
        if name in swept and version in swept[name]:
            rest = ",".join(parts[:i] + parts[i + 1:])
            return (f"{server}@{rest}" if rest else server), name, version
    return None


def release_series(tables: list[Table], settings: dict) -> list[ReleaseSeries]:
    """A series per framework, dependency, test (and n, load point) of a release sweep,
    in the tables' order."""
    swept = swept_versions(settings)
    if not swept:
        return []
    out: dict[tuple, ReleaseSeries] = {}
    for table in tables:
        for row in table.rows:
            found = release_of(row.server, swept)
            if found is None:
                continue
            server, dependency, version = found
            name = table.test if table.n is None else f"{table.test} n={table.n}"
            key = (server, dependency, table.title)
            series = out.setdefault(key, ReleaseSeries(
                server, dependency, swept[dependency], table.test,
                f"{server} across {dependency} releases: {name}"
                + ("" if table.title == table.test else f" ({table.title})")))
            variant = "no database" if row.database in ("None", "none") else \
                f"{row.database}, {'orm' if row.orm in (True, 'True') else 'raw'}"
            series.rows.setdefault(variant, {})[version] = row
    return list(out.values())


def change(series: ReleaseSeries, variant: str) -> float | None:
    """The last listed release's median req/s over the first's (both ok), else None."""
    rows = series.rows[variant]
    first, last = rows.get(series.versions[0]), rows.get(series.versions[-1])
    if not (first and last and first.ranked and last.ranked and first.rps.median):
        return None
    return last.rps.median / first.rps.median


def release_cells(series: ReleaseSeries) -> tuple[list[str], list[list[str]]]:
    def cell(row: Row | None) -> str:
        if row is None:
            return "-"
        if not row.ranked:
            return f"{row.status}: {(row.reason or '')[:80]}"
        p99 = row.latency_ms.get("p99")
        return f"{row.rps.median:,.0f} / " + ("-" if p99 is None else f"{p99:.1f} ms")
    heads = ["variant", *[f"{series.dependency} {v}" for v in series.versions],
             f"{series.versions[-1]} vs {series.versions[0]}"]
    rows = []
    for variant, by_version in series.rows.items():
        ratio = change(series, variant)
        rows.append([variant, *[cell(by_version.get(v)) for v in series.versions],
                     "-" if ratio is None else f"{ratio:.2f}x"])
    return heads, rows
