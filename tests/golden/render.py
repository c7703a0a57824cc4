"""Everything a stored run renders to, as text: the tables in each export format, the
rate tables, the header sentence and a comparison of the run with itself. The golden test
(tests/unit/test_golden.py) renders committed result files of every schema version and
compares the text byte for byte with what the harness rendered before a change.

`python -m tests.golden.render` rewrites the expected files; do that only when a change
of the output is intended, and say so in the commit."""
from __future__ import annotations

import sys
from pathlib import Path

from bench.analysis import compare
from bench.report import comparison, formats, tables
from bench.storage import results

HERE = Path(__file__).resolve().parent
# one folder per fixture: results.json as it was stored, expected/<name> what it renders to
FIXTURES = sorted(p for p in HERE.iterdir() if (p / "results.json").exists())


def render(path: Path) -> dict[str, str]:
    doc = results.load(path)
    built, rates = tables.build_tables(doc), tables.build_rate_tables(doc)
    extra = sorted(formats.EXTRA_COLUMNS)
    out = {name: exporter(built, doc, rates=rates) for name, exporter in
           (("tables.md", formats.to_markdown), ("tables.csv", formats.to_csv),
            ("tables.json", formats.to_json))}
    out["tables-extra.md"] = formats.to_markdown(built, doc, extra=extra, rates=rates)
    out["tables-extra.csv"] = formats.to_csv(built, doc, extra=extra, rates=rates)
    # the same document twice: every case compares with itself
    same = compare.compare(doc, results.load(path), threshold=compare.DEFAULT_THRESHOLD,
                           alpha=compare.ALPHA)
    out["compare.md"] = comparison.to_markdown(same)
    out["compare.json"] = comparison.to_json(same)
    return out


def write_expected() -> None:
    for fixture in FIXTURES:
        expected = fixture / "expected"
        expected.mkdir(exist_ok=True)
        for name, text in render(fixture / "results.json").items():
            (expected / name).write_text(text)
        print(f"wrote {expected}", file=sys.stderr)


if __name__ == "__main__":
    write_expected()
