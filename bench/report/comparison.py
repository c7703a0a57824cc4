"""A comparison of two runs as markdown (a CI summary, a PR comment) or JSON."""
from __future__ import annotations

import json

from tabulate import tabulate

from bench.analysis.compare import NOT_COMPARABLE, SLOWER, Comparison, CaseComparison

MARKS = {"faster": "faster", "slower": "**SLOWER**", "unchanged": "unchanged",
         NOT_COMPARABLE: "not comparable"}


def _ratio(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    text = f"{value:.3f}"
    if ci is not None:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


def _row(c: CaseComparison) -> list[str]:
    variant = f"{c.server} {c.database} {'orm' if c.orm else 'raw'}"
    rps = "-" if c.baseline_rps is None else f"{c.baseline_rps:,.0f} → {c.candidate_rps:,.0f}"
    verdict = MARKS[c.verdict] + (" (weak)" if c.weak and c.verdict != NOT_COMPARABLE else "")
    p = "-" if c.p_value is None else f"{c.p_value:.3f}"
    threshold = f"{c.threshold:.1%}" + (" (cal.)" if c.threshold_source == "calibrated" else "")
    why = c.reason if c.verdict == NOT_COMPARABLE or c.weak else ""
    return [c.test, variant, rps, _ratio(c.rps_ratio, c.rps_ratio_ci),
            _ratio(c.p99_ratio, c.p99_ratio_ci), p, threshold, verdict, why or ""]


HEADERS = ["test", "variant", "req/s (median)", "req/s ratio [95 % CI]", "p99 ratio [95 % CI]",
           "p (Mann-Whitney)", "threshold", "verdict", "why"]


def to_markdown(cmp: Comparison) -> str:
    counts = cmp.counts()
    head = [f"# Comparison: {cmp.candidate} against {cmp.baseline}", "",
            f"{counts['slower']} slower, {counts['faster']} faster, {counts['unchanged']} "
            f"unchanged, {counts['not comparable']} not comparable. A change counts when the "
            f"median req/s moves by more than the threshold and a Mann-Whitney U test on the "
            f"samples gives p < {cmp.alpha:g}; with too few samples for the test, the "
            f"threshold alone decides and the verdict is marked weak. Ratios are candidate / "
            f"baseline.", ""]
    if cmp.calibration:
        head += [f"Per-case thresholds from the calibration {cmp.calibration}.", ""]
    if cmp.run_reasons:
        head += ["**The runs are not comparable:** " + "; ".join(cmp.run_reasons) + ".", ""]
    ordered = sorted(cmp.cases, key=lambda c: (c.verdict != SLOWER, c.verdict == NOT_COMPARABLE))
    body = tabulate([_row(c) for c in ordered], HEADERS, tablefmt="pipe", disable_numparse=True)
    return "\n".join(head + [body, ""])


def to_json(cmp: Comparison) -> str:
    return json.dumps(cmp.as_dict(), indent=2) + "\n"


FORMATS = {"md": to_markdown, "json": to_json}
