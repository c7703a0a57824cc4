"""What a run says on the console about its samples, and the files it leaves for a
reader when it ends (tables.md, report.html). Reads the stored JSON form only."""
from __future__ import annotations

from pathlib import Path

from bench.report import formats, html, tables

OK = "ok"


def sample_outcome(sample: dict) -> str:
    """One finished sample, in a line (plus its warnings): the figures of an ok sample,
    else its status and why."""
    if sample["status"] == OK:
        s = sample["summary"]
        res = (sample.get("resources") or {}).get("server") or {}
        text = (f"{s['requests_per_sec']:,.0f} req/s, p50 {s['latency_ms']['p50']:.2f} ms, "
                f"p99 {s['latency_ms']['p99']:.2f} ms, errors {s['errors']['total']}, "
                f"server {res.get('mean_cores', 0):.2f} cores "
                f"{res.get('memory_peak_mb') or 0:.0f} MiB, "
                f"overhead {sample['overhead_s'].get('total', 0):.2f} s")
        return text + "".join(f"\n       note: {w}" for w in sample["warnings"])
    return f"{sample['status'].upper()}: {sample['reason']}"


def write_run_outputs(doc: dict, run_dir: Path, results_file: Path) -> str:
    """tables.md and report.html of a finished (or ended) run; returns what to print.
    A chart that fails never costs the results: the report then says why it is missing."""
    built, rates = tables.build_tables(doc), tables.build_rate_tables(doc)
    if not built and not rates:
        return f"results: {results_file}"
    text = formats.to_markdown(built, doc, rates=rates)
    (run_dir / "tables.md").write_text(text)
    try:
        report = html.write(doc, built, run_dir, rates)
    except Exception as exc:  # noqa: BLE001 - a chart must never cost the results
        report = f"not written ({type(exc).__name__}: {exc})"
    return (f"\n{text}\nresults: {results_file}\ntables:  {run_dir / 'tables.md'}\n"
            f"report:  {report}")
