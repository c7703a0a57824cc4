"""report.html: one self-contained page per run (tables, charts, environment, warnings,
verification), opened from disk with no network: the charts are embedded as data URIs,
the style is inline, and there is no script."""
from __future__ import annotations

import base64
import html
import json
from pathlib import Path

from tabulate import tabulate

from bench.core.conformance import CHECKS, PASS
from bench.report import charts, cost, footprint, instructions, levels, mix, protocols, \
    proxies, releases, sweep
from bench.report.formats import RATE_COLUMNS, rate_cells, headers, markdown_rows
from bench.report.tables import RateTable, Table, header_sentence
from bench.storage.results import VERIFICATION_REPORT

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #1a202c; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.85em; }
th, td { border: 1px solid #cbd5e0; padding: 0.25em 0.6em; text-align: left; }
th { background: #edf2f7; }
td:nth-child(n+5) { font-variant-numeric: tabular-nums; }
img { max-width: 100%; border: 1px solid #e2e8f0; margin: 0.3em 0; }
.caption { color: #4a5568; font-size: 0.9em; }
.bad { color: #c53030; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; font-size: 0.85em; }
dt { font-weight: 600; }
"""


def _img(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'


def _table_html(table: Table) -> str:
    return tabulate(markdown_rows(table), headers((), bool(table.ceiling)), tablefmt="html",
                    disable_numparse=True)


def _environment(doc: dict) -> str:
    env = dict(doc["environment"])
    items = {k: v for k, v in env.items() if not isinstance(v, (dict, list))}
    items.update({f"tool: {k}": v for k, v in (env.get("tools") or {}).items()})
    items.update({f"git: {k}": v for k, v in (env.get("git") or {}).items()})
    for engine, d in doc.get("databases", {}).items():
        items[f"database: {engine}"] = f"{d.get('version')} ({d.get('mode')})"
    items["load"] = json.dumps(doc.get("load"))
    for server, info in doc.get("servers", {}).items():
        versions = ", ".join(f"{k} {v}" for k, v in (info.get("versions") or {}).items())
        items[f"server: {server}"] = versions or info.get("description", "")
    return "<dl>" + "".join(f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(str(v))}</dd>"
                            for k, v in items.items()) + "</dl>"


def _verification(doc: dict) -> str:
    rows = [[key, "passed" if r.get("passed") else "FAILED", r.get("reason") or ""]
            for key, r in sorted(doc.get("verification", {}).items())]
    if not rows:
        return "<p>No verification ran (--no-verify).</p>"
    return (tabulate(rows, ["variant", "verification", "reason"], tablefmt="html")
            + '<p class="caption">Every check with its measured figures: '
              f'<a href="{VERIFICATION_REPORT}">{VERIFICATION_REPORT}</a>.</p>')


def _series_html(title: str, heads: list[str], rows: list[list[str]], explained: str,
                 chart_name: str, images: dict) -> list[str]:
    """A series across one dimension (connections, releases): table, caption, chart."""
    out = [f'<h2 id="{charts.slug(title)}">{html.escape(title)}</h2>',
           tabulate(rows, heads, tablefmt="html", disable_numparse=True),
           f'<p class="caption">{html.escape(explained)}</p>']
    if chart_name in images:
        out.append(_img(images[chart_name], title))
    return out


def _sweep_html(tables: list[Table], images: dict) -> list[str]:
    """A concurrency sweep: req/s and p99 against connections, table and chart."""
    return [line for series in sweep.sweep_series(tables)
            for line in _series_html(series.title, *sweep.sweep_cells(series),
                                     sweep.SWEEP_EXPLAINED, series.chart_name, images)]


def _releases_html(tables: list[Table], doc: dict, images: dict) -> list[str]:
    """A release sweep: req/s and p99 across the releases of a dependency."""
    return [line for series in releases.release_series(tables, doc.get("settings", {}))
            for line in _series_html(series.title, *releases.release_cells(series),
                                     releases.EXPLAINED, series.chart_name, images)]


def _proxy_cost_html(tables: list[Table]) -> list[str]:
    """What each --behind proxy costs against direct, in the same run."""
    out = []
    for item in proxies.proxy_costs(tables):
        heads, rows = proxies.proxy_cost_cells(item)
        out += [f'<h2 id="{charts.slug(item.title)}">{html.escape(item.title)}</h2>',
                tabulate(rows, heads, tablefmt="html", disable_numparse=True)]
    return out + [f'<p class="caption">{html.escape(proxies.PROXY_COST_EXPLAINED)}</p>'] \
        if out else []


def _conformance(doc: dict) -> list[str]:
    """Every endpoint's HTTP conformance verdicts (a run that recorded any): a verdict
    per check, then what was seen wherever a check did not pass."""
    blocks = [(f"{key}" + ("" if proxy == "none" else f" behind {proxy}"), verdicts)
              for key, r in sorted(doc.get("verification", {}).items())
              for proxy, verdicts in (r.get("conformance") or {}).items()]
    if not blocks:
        return []
    rows = [[where, *[(v.get(c) or {}).get("verdict", "-") for c in CHECKS]]
            for where, v in blocks]
    seen = [f"<li>{html.escape(where)}, {html.escape(c)}: {html.escape(v[c]['verdict'])}: "
            f"{html.escape(v[c]['detail'])}</li>"
            for where, v in blocks for c in CHECKS if c in v and v[c]["verdict"] != PASS]
    return ["<h3>HTTP conformance</h3>",
            '<p class="caption">Checked before any load, against the endpoint the load hits; '
            "warnings only: a server that fails a check is still measured, and marked in "
            "the tables' notes.</p>",
            tabulate(rows, ["endpoint", *CHECKS], tablefmt="html"),
            "<dl>" + "".join(f"<dt>{html.escape(c)}</dt><dd>{html.escape(d)}</dd>"
                             for c, d in CHECKS.items()) + "</dl>",
            *(["<ul>" + "".join(seen) + "</ul>"] if seen else [])]


def _rates_html(table: RateTable, images: dict) -> list[str]:
    knees = "".join(f"<li>{html.escape(name)}: " + (f"{rate:,.0f} req/s" if rate else "none")
                    + "</li>" for name, rate in table.knees.items())
    out = [f'<h2 id="{charts.slug(table.title)}">{html.escape(table.title)}</h2>',
           tabulate([rate_cells(r) for r in table.rows], RATE_COLUMNS, tablefmt="html",
                    disable_numparse=True),
           f'<p class="caption">Knee: the highest rate whose p99 stays under '
           f'{table.bound_ms:g} ms.</p><ul>{knees}</ul>']
    name = f"{charts.slug(table.title)}-rate.png"
    if name in images:
        out.append(_img(images[name], table.title))
    return out


def _levels_html(tables: list[Table], doc: dict, images: dict) -> list[str]:
    """The suite across n: req/s against n with its chart, the cache's speed-up."""
    out = []
    for series in levels.level_series(tables):
        heads, rows = levels.level_cells(series)
        out += [f'<h2 id="{charts.slug(series.title)}">{html.escape(series.title)}</h2>',
                tabulate(rows, heads, tablefmt="html", disable_numparse=True),
                '<p class="caption">Median req/s [95 % interval of the median] per n.</p>']
        if series.chart_name in images:
            out.append(_img(images[series.chart_name], series.title))
    speedup = levels.speedup_table(doc)
    if speedup:
        out += ['<h2 id="cache_speed_up">cache speed-up</h2>',
                tabulate(speedup[1], speedup[0], tablefmt="html", disable_numparse=True),
                f'<p class="caption">{html.escape(levels.SPEEDUP_EXPLAINED)}</p>']
    return out


def render(doc: dict, tables: list[Table], chart_dir: Path,
           rates: list[RateTable] = ()) -> str:
    images = {p.name: p for p in charts.run_charts(tables, doc, chart_dir, rates)}
    parts = [f"<h1>Results of run {html.escape(doc['run_id'])}</h1>",
             f'<p class="caption">{html.escape(header_sentence(doc))}</p>']
    if doc["status"] != "complete":
        parts.append(f'<p class="bad">Run status: {html.escape(doc["status"])}: '
                     f'{html.escape(doc.get("reason") or "")}</p>')
    parts.append('<p class="caption">req/sec: median of the samples ± their coefficient of '
                 'variation; ≈: statistical tie with the row above (95 % confidence '
                 'intervals of the medians overlap). Rows that are not clean measurements '
                 'keep their place at the bottom with the reason.</p>')
    for table in tables:
        slug = charts.slug(table.title)
        parts.append(f'<h2 id="{slug}">{html.escape(table.title)}</h2>')
        parts.append(_table_html(table))
        if table.notes:
            parts.append("<ol>" + "".join(f"<li>{html.escape(n)}</li>" for n in table.notes)
                         + "</ol>")
        for kind in ("throughput", "latency"):
            name = f"{slug}-{kind}.png"
            if name in images:
                parts.append(_img(images[name], f"{table.title}: {kind}"))
    parts += _levels_html(tables, doc, images)
    parts += _sweep_html(tables, images)
    parts += _releases_html(tables, doc, images)
    parts += _proxy_cost_html(tables)
    parts += [line for table in protocols.protocol_effects(doc)
              for line in _series_html(table.title, *protocols.effect_cells(table),
                                       protocols.EXPLAINED[table.kind], table.chart_name,
                                       images)]
    for table in rates:
        parts += _rates_html(table, images)
    parts += mix.mix_html(doc)
    parts += instructions.instructions_html(doc)
    parts += cost.cost_html(doc) + footprint.footprint_html(doc)
    if charts.FOOTPRINT_CHART in images:
        parts.append(_img(images[charts.FOOTPRINT_CHART], "what each case costs to run"))
    parts += ["<h2>Verification</h2>", _verification(doc), *_conformance(doc),
              "<h2>Environment</h2>", _environment(doc)]
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>webbench {html.escape(doc['run_id'])}</title><style>{STYLE}</style>"
            "</head><body>\n" + "\n".join(parts) + "\n</body></html>\n")


def write(doc: dict, tables: list[Table], run_dir: Path, rates: list[RateTable] = ()) -> Path:
    """report.html and the charts (charts/*.png, also usable on their own) in run_dir."""
    path = run_dir / "report.html"
    path.write_text(render(doc, tables, run_dir / "charts", rates))
    return path
