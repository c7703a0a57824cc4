"""Charts for a blog post or a CI page, drawn with matplotlib from the table model (and
from history series): each readable on its own, with title, units, labels and, in the
caption, the machine and settings that produced it."""
from __future__ import annotations

import math
import textwrap
from pathlib import Path

from bench.analysis.history import Series
from bench.report.levels import LevelSeries, level_series
from bench.report.protocols import EffectTable, protocol_effects
from bench.report.releases import ReleaseSeries, release_series
from bench.report.sweep import SweepSeries, sweep_series
from bench.report.tables import RateTable, Row, Table, header_sentence, slug

LATENCY_POINTS = (("p50", 50), ("p75", 75), ("p90", 90), ("p99", 99), ("p99_9", 99.9))
DPI = 110


def _subplots(*grid: int, figsize: tuple[float, float], sharex: bool = False):
    """A figure and its axes, drawn to files only: matplotlib's Figure without pyplot,
    whose global figure registry (and GUI backend selection) a file needs nothing of.
    Imported here, not at the top: matplotlib costs a second of CPU to import, which
    every command that draws no chart (verify, list, a bad option's exit 2) would pay."""
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize)
    return fig, fig.subplots(*grid, sharex=sharex)


def _label(row: Row) -> str:
    if row.database == "None":
        return row.server
    return f"{row.server} ({row.database}, {'orm' if row.orm == 'True' else 'raw'})"


def _caption(fig, text: str) -> None:
    fig.text(0.01, 0.01, "\n".join(textwrap.wrap(text, 150)), fontsize=7, color="#444",
             va="bottom", ha="left")


def throughput_chart(table: Table, doc: dict, path: Path) -> Path | None:
    """Horizontal bars of median req/s, best on top, with the 95 % interval of the median."""
    rows = [r for r in table.rows if r.ranked]
    if not rows:
        return None
    rows = rows[::-1]                       # barh draws bottom-up: best ends on top
    total = 2.4 + 0.3 * len(rows)               # inches: bars + title, axis label, caption
    fig, ax = _subplots(figsize=(9, total))
    medians = [r.rps.median for r in rows]
    low = [r.rps.median - (r.rps.ci_low if r.rps.ci_low is not None else r.rps.median)
           for r in rows]
    high = [(r.rps.ci_high if r.rps.ci_high is not None else r.rps.median) - r.rps.median
            for r in rows]
    colors = ["#9aa5b1" if r.client_bound else "#2b6cb0" for r in rows]
    ax.barh(range(len(rows)), medians, xerr=[low, high], color=colors, capsize=3,
            error_kw={"elinewidth": 1, "ecolor": "#222"})
    ax.set_yticks(range(len(rows)), [_label(r) for r in rows], fontsize=8)
    for i, r in enumerate(rows):
        mark = (" ≈" if r.tie else "") + (" (client-bound)" if r.client_bound else "")
        right = max(r.rps.median, r.rps.ci_high or 0)      # past the whisker, not over it
        ax.text(right, i, f"  {r.rps.median:,.0f}{mark}", va="center", fontsize=7)
    ax.set_xlabel("requests per second (median of the samples; whiskers: 95 % CI of the median)")
    ax.set_title(f"{table.title}: throughput", fontsize=11)
    ax.margins(x=0.18)
    fig.subplots_adjust(left=0.3, bottom=1.45 / total, top=1 - 0.45 / total)
    _caption(fig, header_sentence(doc) + " Grey bars: client-bound (the load generator "
             "limited the figure). ≈: statistical tie with the row above.")
    fig.savefig(path, dpi=DPI)
    return path


def _nines(percentile: float) -> float:
    """A percentile on a "nines" axis: p90 -> 1, p99 -> 2, p99.9 -> 3 (the tail gets
    as much room as the body, as HdrHistogram's percentile plots draw it)."""
    return -math.log10(1 - percentile / 100)


NINES_TICKS = (50, 90, 99, 99.9, 99.99, 99.999)


def latency_chart(table: Table, doc: dict, path: Path) -> Path | None:
    """Latency against percentile per row, log scale, on a "nines" axis: the whole curve
    of the merged distribution where the row has one (bench.analysis.latency), else the
    medians of the samples' p50 .. p99.9 as points."""
    rows = [r for r in table.rows if r.ranked]
    if not rows:
        return None
    fig, ax = _subplots(figsize=(9, 5.4))
    top = 3.0
    for r in rows:
        if r.latency_curve:
            points = [(_nines(p), ms) for p, ms in r.latency_curve if p < 100 and ms]
            style = {"marker": None}
        else:
            points = [(_nines(p), r.latency_ms.get(key)) for key, p in LATENCY_POINTS
                      if r.latency_ms.get(key)]
            style = {"marker": "o", "markersize": 3, "linestyle": "--"}
        if points:
            ax.plot(*zip(*points), linewidth=1.2, label=_label(r), **style)
            top = max(top, max(x for x, _ in points))
    ticks = [p for p in NINES_TICKS if _nines(p) <= top + 1e-9]
    ax.set_yscale("log")
    ax.set_xticks([_nines(p) for p in ticks], [f"p{p:g}" for p in ticks])
    ax.set_xlabel("percentile (the tail spread out: each step is ten times rarer)")
    ax.set_ylabel("latency, ms (log scale)")
    ax.set_title(f"{table.title}: latency percentiles", fontsize=11)
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    fig.subplots_adjust(bottom=0.2, top=0.92)
    merged = sum(bool(r.latency_curve) for r in rows)
    source = {0: ", median of the samples.",
              len(rows): ", from the samples' latency histograms merged (HDR, 3 significant "
                         "digits)."}.get(merged, ": solid lines from the samples' latency "
                                                 "histograms merged (HDR, 3 significant "
                                                 "digits), dashed points the medians of the "
                                                 "samples' percentiles.")
    _caption(fig, header_sentence(doc) + " Percentiles as wrk reports them (corrected for "
             "coordinated omission)" + source)
    fig.savefig(path, dpi=DPI)
    return path


def rate_chart(table: RateTable, doc: dict, path: Path) -> Path | None:
    """p99 (solid) and p50 (dashed) against the achieved rate, one colour per variant,
    the knee's bound as a horizontal line; points that did not reach their rate are left
    out (they are not measurements at that rate)."""
    curves: dict[str, list] = {}
    for r in table.rows:
        if r.status == "ok" and r.achieved and r.latency_ms.get("p99"):
            name = r.server if r.database == "None" else \
                f"{r.server} ({r.database}, {'orm' if r.orm == 'True' else 'raw'})"
            curves.setdefault(name, []).append(r)
    if not curves:
        return None
    fig, ax = _subplots(figsize=(9, 5.4))
    for name, rows in curves.items():
        rows.sort(key=lambda r: r.achieved)
        xs = [r.achieved for r in rows]
        line, = ax.plot(xs, [r.latency_ms["p99"] for r in rows], marker="o", label=f"{name} p99")
        ax.plot(xs, [r.latency_ms.get("p50") for r in rows], linestyle="--", marker=".",
                color=line.get_color(), label=f"{name} p50")
    ax.axhline(table.bound_ms, color="#c53030", linewidth=0.8,
               label=f"knee bound: p99 {table.bound_ms:g} ms")
    ax.set_yscale("log")
    ax.set_xlabel("requests per second sent and answered (open model, fixed rate)")
    ax.set_ylabel("latency from the intended send time, ms (log scale)")
    ax.set_title(f"{table.title}", fontsize=10)
    ax.grid(True, which="both", axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.subplots_adjust(bottom=0.2, top=0.92)
    _caption(fig, header_sentence(doc))
    fig.savefig(path, dpi=DPI)
    return path


def _medians_and_bars(rows: list[Row]) -> tuple[list[float], list[list[float]]]:
    """The rows' median req/s and their 95 % intervals as matplotlib's error bars (below,
    above); a row without an interval gets none."""
    medians = [r.rps.median for r in rows]
    low = [m - (r.rps.ci_low if r.rps.ci_low is not None else m) for m, r in zip(medians, rows)]
    high = [(r.rps.ci_high if r.rps.ci_high is not None else m) - m
            for m, r in zip(medians, rows)]
    return medians, [low, high]


def level_chart(series: LevelSeries, doc: dict, path: Path) -> Path:
    """Median req/s against n (log scale), a line per server variant, the 95 % interval of
    each median as error bars."""
    fig, ax = _subplots(figsize=(9, 5.4))
    for name, rows in series.curves.items():
        medians, bars = _medians_and_bars(rows)
        ax.errorbar([r.n for r in rows], medians, yerr=bars, marker="o", markersize=3,
                    linewidth=1.2, capsize=3, label=name)
    ax.set_xscale("log")
    ax.set_xticks(series.levels, [str(n) for n in series.levels])
    ax.minorticks_off()
    ax.set_xlabel("n: rows per request (log scale)")
    ax.set_ylabel("req/s (median; bars: 95 % CI of the median)")
    ax.set_title(series.title, fontsize=11)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper right", ncol=2)
    fig.subplots_adjust(bottom=0.2, top=0.92)
    _caption(fig, header_sentence(doc) + " Only ok measurements make points.")
    fig.savefig(path, dpi=DPI)
    return path


def sweep_chart(series: SweepSeries, doc: dict, path: Path) -> Path:
    """A concurrency sweep: median req/s (95 % interval as error bars) above, p99 below,
    both against connections (log scale), a line per server variant."""
    fig, (top, bottom) = _subplots(2, 1, figsize=(9, 7.2), sharex=True)
    for name, curve in series.curves.items():
        levels = [c for c, _ in curve]
        medians, bars = _medians_and_bars([r for _, r in curve])
        line = top.errorbar(levels, medians, yerr=bars, marker="o", markersize=3,
                            linewidth=1.2, capsize=3, label=name)
        p99 = [(c, r.latency_ms.get("p99")) for c, r in curve]
        bottom.plot([c for c, v in p99 if v is not None], [v for _, v in p99 if v is not None],
                    marker="o", markersize=3, linewidth=1.2, color=line[0].get_color())
    top.set_ylabel("req/s (median; bars: 95 % CI)")
    top.set_title(series.title, fontsize=11)
    top.legend(fontsize=7, loc="best", ncol=2)
    bottom.set_yscale("log")
    # plain numbers (0.5, 2, 10), not powers of ten: a latency is read, not estimated
    from matplotlib.ticker import FuncFormatter
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    bottom.yaxis.set_major_formatter(plain)
    bottom.yaxis.set_minor_formatter(plain)
    bottom.set_ylabel("p99 latency (ms, log scale)")
    bottom.set_xscale("log")
    bottom.set_xticks(series.connections, [str(c) for c in series.connections])
    bottom.minorticks_off()
    bottom.set_xlabel("connections (log scale)")
    return _save_two_panels(fig, (top, bottom), doc, path, bottom_margin=0.16)


def release_chart(series: ReleaseSeries, doc: dict, path: Path) -> Path:
    """A release sweep: median req/s (95 % interval as error bars) above, p99 below, both
    against the releases in the order listed, a line per variant; a release with no ok
    row is a gap."""
    fig, (top, bottom) = _subplots(2, 1, figsize=(9, 7.2), sharex=True)
    x = list(range(len(series.versions)))
    for variant, by_version in series.rows.items():
        points = [(i, by_version.get(v)) for i, v in enumerate(series.versions)]
        ok = [(i, r) for i, r in points if r is not None and r.ranked]
        if not ok:
            continue
        medians, bars = _medians_and_bars([r for _, r in ok])
        line = top.errorbar([i for i, _ in ok], medians, yerr=bars, marker="o",
                            markersize=4, linewidth=1.2, capsize=3, label=variant)
        p99 = [(i, r.latency_ms.get("p99")) for i, r in ok]
        bottom.plot([i for i, v in p99 if v is not None], [v for _, v in p99 if v is not None],
                    marker="o", markersize=4, linewidth=1.2, color=line[0].get_color())
    top.set_ylabel("req/s (median; bars: 95 % CI)")
    top.set_ylim(bottom=0)
    top.set_title(series.title, fontsize=11)
    top.legend(fontsize=7, loc="best")
    bottom.set_ylabel("p99 latency (ms)")
    bottom.set_ylim(bottom=0)
    bottom.set_xticks(x, [f"{series.dependency}\n{v}" for v in series.versions])
    bottom.set_xlabel("release of the dependency (the framework's own code unchanged)")
    return _save_two_panels(fig, (top, bottom), doc, path, bottom_margin=0.18)


def protocol_chart(table: EffectTable, doc: dict, path: Path) -> Path | None:
    """What TLS costs or HTTP/2 gives: each variant's paired req/s share of its h1
    baseline, with the 95 % interval, around a line at 100 %."""
    effects = [e for e in table.effects if e.share.median is not None][::-1]
    if not effects:
        return None
    total = 2.4 + 0.3 * len(effects)
    fig, ax = _subplots(figsize=(9, total))
    shares = [e.share.median * 100 for e in effects]
    bars = [[(e.share.median - (e.share.ci_low if e.share.ci_low is not None
                                else e.share.median)) * 100 for e in effects],
            [((e.share.ci_high if e.share.ci_high is not None else e.share.median)
              - e.share.median) * 100 for e in effects]]
    ax.barh(range(len(effects)), shares, xerr=bars, color="#2b6cb0", capsize=3,
            error_kw={"elinewidth": 1, "ecolor": "#222"})
    ax.axvline(100, color="#c53030", linewidth=1)
    ax.set_yticks(range(len(effects)), [f"{e.variant}: {e.protocol}" for e in effects],
                  fontsize=8)
    for i, (value, e) in enumerate(zip(shares, effects)):
        right = max(value, (e.share.ci_high or 0) * 100)      # past the whisker, not over it
        ax.text(right, i, f"  {value:.0f} %", va="center", fontsize=7)
    against = sorted({e.against for e in effects})
    ax.set_xlabel(f"req/s, % of {' / '.join(against)} in the same rounds (whiskers: 95 % CI)")
    ax.set_title(table.title, fontsize=11)
    ax.margins(x=0.15)
    fig.subplots_adjust(left=0.42, bottom=1.45 / total, top=1 - 0.45 / total)
    _caption(fig, header_sentence(doc) + " Red line: as fast as HTTP/1.1 over TCP.")
    fig.savefig(path, dpi=DPI)
    return path


FOOTPRINT_CHART = "cost-to-run.png"


def footprint_chart(doc: dict, path: Path) -> Path | None:
    """What each case costs to run, two scatters: req/s against the peak memory under load
    (up and to the left is better), and the start-up against the size of what runs (down
    and to the left); one point per case, labelled. None when no case has the figures."""
    from bench.analysis.footprint import case_footprint
    from bench.analysis.statistics import refresh
    refresh(doc)
    points = []
    for case in doc["cases"]:
        fp = case_footprint(case, (doc.get("builds") or {}).get(case["server"]))
        if fp is not None:
            label = case["server"] if case["database"] == "none" else \
                f"{case['server']} ({case['database']}, {'orm' if case.get('orm') else 'raw'})"
            points.append((f"{label}: {case['test']}", fp))
    memory = [(n, f.load_peak_mb, f.requests_per_sec) for n, f in points
              if f.load_peak_mb and f.requests_per_sec]
    # start-up is the server's, whatever the test: one point per server
    start = {n.split(":")[0].split(" (")[0]: (f.artefact_mb, f.start_to_ping_s.median * 1000)
             for n, f in points if f.artefact_mb and f.start_to_ping_s}
    if not memory and not start:
        return None
    fig, (left, right) = _subplots(1, 2, figsize=(12, 5.2))
    for ax, found, xlabel, ylabel, title in (
            (left, memory, "peak memory under load (MiB, PSS)", "median req/s",
             "throughput against memory"),
            (right, [(n, x, y) for n, (x, y) in start.items()],
             "what runs (MiB: binary, jar, virtualenv, node_modules)",
             "median start-up to /ping/ (ms)", "start-up against size")):
        if not found:
            ax.set_axis_off()
            continue
        ax.scatter([x for _, x, _ in found], [y for _, _, y in found], color="#2b6cb0", s=18)
        for name, x, y in found:
            ax.annotate(name, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel, fontsize=9)
        ax.set_ylabel(ylabel, fontsize=9)
        ax.set_title(title, fontsize=11)
        ax.grid(True, which="major", alpha=0.3)
    fig.subplots_adjust(bottom=0.24, top=0.92, wspace=0.3)
    _caption(fig, header_sentence(doc) + " One point per case (left) or server (right), "
                  "medians of the ok samples; the sizes as each build recorded them.")
    fig.savefig(path, dpi=DPI)
    return path


def _save_two_panels(fig, axes, doc: dict, path: Path, bottom_margin: float) -> Path:
    """req/s above, p99 below (a sweep's or a release sweep's chart): grid, caption, file."""
    for ax in axes:
        ax.grid(True, which="major", alpha=0.3)
    fig.subplots_adjust(bottom=bottom_margin, top=0.94, hspace=0.08)
    _caption(fig, header_sentence(doc) + " Only ok measurements make points.")
    fig.savefig(path, dpi=DPI)
    return path


def run_charts(tables: list[Table], doc: dict, folder: Path,
               rates: list[RateTable] = ()) -> list[Path]:
    """Every chart of a run, written into `folder` (created)."""
    folder.mkdir(parents=True, exist_ok=True)
    out = [p for t in rates if (p := rate_chart(t, doc, folder / f"{slug(t.title)}-rate.png"))]
    out += [level_chart(s, doc, folder / s.chart_name) for s in level_series(tables)]
    out += [sweep_chart(s, doc, folder / s.chart_name) for s in sweep_series(tables)]
    out += [release_chart(s, doc, folder / s.chart_name)
            for s in release_series(tables, doc.get("settings", {}))]
    out += [p for t in protocol_effects(doc)
            if (p := protocol_chart(t, doc, folder / t.chart_name))]
    if (path := footprint_chart(doc, folder / FOOTPRINT_CHART)):
        out.append(path)
    for table in tables:
        name = slug(table.title)
        for draw, kind in ((throughput_chart, "throughput"), (latency_chart, "latency")):
            path = draw(table, doc, folder / f"{name}-{kind}.png")
            if path:
                out.append(path)
    return out


HISTORY_LABELS = {"req/s": ("requests per second", "throughput"),
                  "start-up": ("start-up to /ping/", "start-up"),
                  "peak memory": ("peak memory under load", "memory")}


def history_chart(series: Series, path: Path, machine: str, figure: str = "req/s",
                  unit: str = "req/s", scale: float = 1) -> Path:
    """A case's median `figure` over the runs (times `scale`, in `unit`), its 95 %
    interval as a band, change points as vertical lines labelled with the relative change."""
    fig, ax = _subplots(figsize=(9, 4.2))
    xs = list(range(len(series.points)))
    medians = [p.median * scale for p in series.points]
    lows = [(p.ci_low if p.ci_low is not None else p.median) * scale for p in series.points]
    highs = [(p.ci_high if p.ci_high is not None else p.median) * scale for p in series.points]
    label, what = HISTORY_LABELS[figure]
    ax.fill_between(xs, lows, highs, color="#2b6cb0", alpha=0.15, label="95 % CI of the median")
    ax.plot(xs, medians, marker="o", markersize=3, color="#2b6cb0", label=f"median {figure}")
    for cp in series.change_points:
        ax.axvline(cp.index - 0.5, color="#c53030", linestyle="--", linewidth=1)
        bump = "\n".join(f" {c}" for c in cp.dependency_changes[:3])
        ax.text(cp.index - 0.5, max(highs), f" {cp.change:+.1%}" + (f"\n{bump}" if bump else ""),
                color="#c53030", fontsize=8, va="top")
    step = max(1, len(xs) // 10)
    ax.set_xticks(xs[::step], [p.run_id[:15] for p in series.points][::step], rotation=30,
                  fontsize=7, ha="right")
    ax.set_ylabel(label if figure == "req/s" else f"{label} ({unit})")
    variant = f"{series.server} {series.database} {'orm' if series.orm else 'raw'}"
    ax.set_title(f"{series.title}, {variant}: {what} over time", fontsize=11)
    ax.legend(fontsize=7, loc="lower left")
    fig.subplots_adjust(bottom=0.3, top=0.9)
    _caption(fig, f"Machine {machine}; comparability key {series.key_id}; {len(xs)} runs; "
                  f"dashed lines: change points (E-divisive, Apache Otava).")
    fig.savefig(path, dpi=DPI)
    return path
