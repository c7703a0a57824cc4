"""A comparison of two runs as markdown (a CI summary, a pull-request comment) or JSON:
broken rows first, then the slower ones; per case the figures that moved, the thresholds
used and where they came from; warnings for weak verdicts with the samples they need."""
from __future__ import annotations

import json

from tabulate import tabulate

from bench.analysis import comparability
from bench.analysis import instructions as counted
from bench.analysis.compare import (BROKEN, COST, DEFAULT_SOURCE, ERROR_RATE, FASTER, FIGURES,
                                    NOT_COMPARABLE, P99, RELATIVE, RPS, SLOWER, UNCHANGED,
                                    CaseComparison, Comparison)

MARKS = {BROKEN: "**BROKEN**", SLOWER: "**SLOWER**", FASTER: "faster", UNCHANGED: "unchanged",
         NOT_COMPARABLE: "not comparable"}
ORDER = {BROKEN: 0, SLOWER: 1, FASTER: 2, UNCHANGED: 3, NOT_COMPARABLE: 4}
SHORT = {RPS: "req/s", P99: "p99", ERROR_RATE: "errors"}


def threshold_text(figure: str, value: float) -> str:
    return f"{value:.1%}" if RELATIVE[figure] else f"{value * 100:.2f} pp"


def _ratio(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    text = f"{value:.3f}"
    if ci is not None:
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


def _error_rates(c: CaseComparison) -> str:
    f = c.figure(ERROR_RATE)
    return "-" if f is None else f"{f.baseline:.3%} → {f.candidate:.3%}"


def _thresholds(c: CaseComparison, cmp: Comparison) -> str:
    if not c.figures:
        return "-"
    calibrated = any(f.threshold_source != DEFAULT_SOURCE for f in c.figures)
    values = {f.figure: f.threshold for f in c.figures}
    text = " / ".join(threshold_text(fig, values.get(fig, cmp.thresholds[fig])) for fig in FIGURES)
    return text + (" (cal.)" if calibrated else "")


def _why(c: CaseComparison) -> str:
    if not c.figures:
        return c.reason or ""
    moved = sorted((f for f in c.figures if f.direction),
                   key=lambda f: f.direction != "worse")
    return ", ".join(f.text() + (" (weak)" if f.weak else " (counted)" if f.p_value is None
                                 else f" (p {f.p_value:.3f})") for f in moved)


def _count(c: CaseComparison, figure: str) -> str:
    f = c.figure(figure)
    if f is None or f.change is None:
        return "-"
    digits = ",.0f" if figure == counted.INSTRUCTIONS else ".2f"
    return (f"{f.baseline:{digits}} → {f.candidate:{digits}} ({f.change:+.2%}; threshold "
            f"{f.threshold:.2%}{', cal.' if f.threshold_source != DEFAULT_SOURCE else ''})")


def _row(c: CaseComparison, cmp: Comparison, with_counts: bool = False) -> list[str]:
    variant = f"{c.server} {c.database} {'orm' if c.orm else 'raw'}"
    rps = "-" if c.baseline_rps is None else f"{c.baseline_rps:,.0f} → {c.candidate_rps:,.0f}"
    verdict = MARKS[c.verdict] + (" (weak)" if c.weak else "")
    p = "-" if c.p_value is None else f"{c.p_value:.3f}"
    why = _why(c)
    changed = cmp.dependency_changes.get(c.server)
    if changed:
        why += ("; " if why else "") + f"dependencies changed: {', '.join(changed)}"
    cost = c.figure(COST)
    counts = [_count(c, figure) for figure in counted.COUNTED] if with_counts else []
    return [c.title, variant, rps, _ratio(c.rps_ratio, c.rps_ratio_ci),
            _ratio(c.p99_ratio, c.p99_ratio_ci), _error_rates(c),
            _ratio(cost.ratio, cost.ci) if cost else "-", *counts, p, _thresholds(c, cmp),
            verdict, why]


HEADERS = ["test", "variant", "req/s (median)", "req/s ratio [95 % CI]", "p99 ratio [95 % CI]",
           "error rate", "server CPU-µs/req ratio [95 % CI]", "p (req/s)",
           "thresholds req/s / p99 / errors / cost / start-up / memory", "verdict", "what moved"]
COUNT_HEADERS = ["instructions/req", "syscalls/req"]


def headers(with_counts: bool) -> list[str]:
    return HEADERS[:7] + (COUNT_HEADERS if with_counts else []) + HEADERS[7:]


def warnings(cmp: Comparison) -> list[str]:
    """What a reader (and a CI log) must not miss, one line each."""
    out = []
    if cmp.run_reasons:
        out.append("the runs are not comparable as a whole, so nothing was judged (a new "
                   "machine or settings? calibrate and start a new baseline): "
                   + "; ".join(cmp.run_reasons))
    if cmp.noise_reasons:
        out.append("the runs ran on machines unequally quiet, so a verdict is weak unless "
                   f"req/s moved by more than {comparability.NOISE_EXPLAINS:g} times the "
                   "gap: " + "; ".join(cmp.noise_reasons))
    untested = [c for c in cmp.cases if any(f.weak for f in c.figures)]
    if untested:
        f = next(f for f in untested[0].figures if f.weak)
        out.append(f"{len(untested)} case(s) have too few samples for the test "
                   f"({f.samples[0]} vs {f.samples[1]} cannot reach p < {cmp.alpha:g} in a "
                   f"Mann-Whitney U test): their verdicts rest on the thresholds alone and "
                   f"fail nothing ({len(cmp.weak)} moved, marked weak); {f.samples_needed} "
                   f"samples a side (--repeat) would make them decisive")
    if cmp.calibration_note:
        out.append(cmp.calibration_note)
    return out


def to_markdown(cmp: Comparison) -> str:
    counts = cmp.counts()
    defaults = ", ".join(f"{fig} {threshold_text(fig, cmp.thresholds[fig])}" for fig in FIGURES)
    head = [f"# Comparison: {cmp.candidate} against {cmp.baseline}", "",
            f"{counts[BROKEN]} broken, {counts[SLOWER]} slower, {counts[FASTER]} faster, "
            f"{counts[UNCHANGED]} unchanged, {counts[NOT_COMPARABLE]} not comparable. A figure "
            f"(median req/s, median p99, error rate, the server's median CPU-µs per request, its "
            f"median start-up to /ping/ and peak memory under load) moved when it changed by more than its "
            f"threshold and a Mann-Whitney U test on the samples gives p < {cmp.alpha:g}; "
            f"slower: some figure is worse; broken: ok in the baseline, not in the candidate. "
            f"Ratios are candidate / baseline.", "",
            f"Thresholds: {defaults} by default"
            + (f"; per case from the calibration {cmp.calibration} where it has one (cal.)."
               if cmp.calibration else "."), ""]
    head += [f"**Warning:** {line}." for line in warnings(cmp)]
    if head[-1] != "":
        head.append("")
    if cmp.dependency_changes:
        head += ["Dependencies that changed between the runs (each server's own "
                 "environment, as recorded with its samples):", ""]
        head += [f"- {server}: {', '.join(changes)}"
                 for server, changes in cmp.dependency_changes.items()] + [""]
    ordered = sorted(cmp.cases, key=lambda c: ORDER[c.verdict])
    with_counts = any(f.figure in counted.COUNTED for c in cmp.cases for f in c.figures)
    body = tabulate([_row(c, cmp, with_counts) for c in ordered], headers(with_counts),
                    tablefmt="pipe", disable_numparse=True)
    foot = [] if not with_counts else [
        "", "Instructions and system calls per request (--instructions) are counted, not "
            "sampled: no rank test; a change counts past its threshold (a calibration's, "
            f"else {cmp.thresholds[counted.INSTRUCTIONS]:.1%} and "
            f"{cmp.thresholds[counted.SYSCALLS]:.0%}) and past "
            f"{counted.NOISE_MULTIPLE:g} times the spread of either run's counts."]
    return "\n".join(head + [body] + foot + [""])


def to_json(cmp: Comparison) -> str:
    d = cmp.as_dict()
    d["warnings"] = warnings(cmp)
    return json.dumps(d, indent=2) + "\n"


FORMATS = {"md": to_markdown, "json": to_json}
