"""An A/B run's verdicts as markdown (a pull-request comment) or JSON, from the stored
document and the paired analysis (bench.analysis.paired)."""
from __future__ import annotations

import json

from tabulate import tabulate

from bench.analysis import comparability
from bench.analysis import instructions as counted
from bench.analysis.figures import COST, ERROR_RATE, P99, RELATIVE, RPS
from bench.analysis.paired import ALPHA, MIN_EFFECT, PairedCase, PairedFigure

MARKS = {"slower": "**SLOWER**", "broken": "**BROKEN**", "faster": "faster",
         "unchanged": "unchanged", "not comparable": "not comparable"}
ORDER = ("broken", "slower", "faster", "not comparable", "unchanged")
# the marker a pull-request workflow finds its own comment by, to update it
COMMENT_MARKER = "<!-- webbench-ab -->"


def _change(f: PairedFigure | None) -> str:
    if f is None or f.change is None:
        return "-"
    if not RELATIVE[f.figure]:          # the error rate: a change in points
        return f"{f.change * 100:+.2f} pp"
    text = f"{f.change:+.1%}"
    if f.ci is not None:
        text += f" [{f.ci[0]:+.1%}, {f.ci[1]:+.1%}]"
    return text


def dependency_changes(doc: dict, servers: list[str]) -> dict[str, list[str]]:
    """{server: "sanic 25.12.1 → 23.6.0", ...} between its baseline's (A) environment and
    its candidate's (B), as each arm's samples recorded them."""
    out = {}
    for server in servers:
        out.update(comparability.server_dependency_changes(doc, doc, f"{server}@A",
                                                           f"{server}@B"))
    return out


def _count_change(f: PairedFigure | None) -> str:
    """A counted figure's change with its two means: '+0.62 % (226,110 → 227,510)'."""
    if f is None or f.change is None:
        return "-"
    digits = ",.0f" if f.figure == counted.INSTRUCTIONS else ".2f"
    return f"{f.change:+.2%} ({f.baseline:{digits}} → {f.candidate:{digits}})"


def _row(c: PairedCase, changes: dict[str, list[str]], with_counts: bool) -> list[str]:
    figs = {f.figure: f for f in c.figures}
    rps = figs.get(RPS)
    medians = "-" if rps is None or rps.baseline is None else \
        f"{rps.baseline:,.0f} → {rps.candidate:,.0f}"
    floor = "-" if rps is None or rps.noise_floor is None else \
        f"{rps.noise_floor:.1%} / {rps.threshold:.1%}"
    p = "-" if rps is None or rps.p_value is None else f"{rps.p_value:.3f}"
    counts = [_count_change(figs.get(counted.INSTRUCTIONS)),
              _count_change(figs.get(counted.SYSCALLS))] if with_counts else []
    return [c.test, f"{c.server} {c.database} {'orm' if c.orm else 'raw'}", medians,
            _change(rps), _change(figs.get(P99)), _change(figs.get(ERROR_RATE)),
            _change(figs.get(COST)), *counts, p, floor,
            MARKS[c.verdict], c.reason or "", ", ".join(changes.get(c.server, [])) or "-"]


HEADERS = ["test", "variant", "req/s A → B (median)", "req/s change [95 % CI]", "p99 change",
           "error-rate change", "server CPU-µs/req change [95 % CI]", "p (req/s)",
           "A/A noise / threshold (req/s)", "verdict", "why", "dependencies A → B"]
COUNT_HEADERS = ["instructions/req change (A → B)", "syscalls/req change (A → B)"]
WHERE_TITLES = {counted.INSTRUCTIONS: "its functions (callgrind)",
                "python": "in Python: bytecodes per request by Python function (self)",
                counted.SYSCALLS: "system calls"}


def headers(with_counts: bool) -> list[str]:
    return HEADERS[:7] + (COUNT_HEADERS if with_counts else []) + HEADERS[7:]


def where_lines(rows: list[PairedCase]) -> list[str]:
    """For each case whose count moved, the ten parts that account for most of it, each
    as a share of the baseline's whole (bench.analysis.instructions.where)."""
    out = []
    for c in rows:
        for figure, parts in c.where.items():
            judged = next((f for f in c.figures if f.figure == (
                counted.INSTRUCTIONS if figure == "python" else figure)), None)
            if judged is None or judged.change is None:
                continue
            listed = ", ".join(f"`{counted.short(p.name)}` {p.share:+.2%}" for p in parts)
            unit = counted.UNITS_OF.get(figure, figure)
            out.append(f"- {c.test}, {c.server} {c.database} {'orm' if c.orm else 'raw'}: "
                       + (f"{judged.change:+.2%} {unit}; " if figure != "python" else "")
                       + f"{WHERE_TITLES[figure]}: {listed or 'no part moved'}")
    return out


def counts(rows: list[PairedCase]) -> dict[str, int]:
    return {v: sum(1 for r in rows if r.verdict == v) for v in ORDER}


def to_markdown(doc: dict | None, rows: list[PairedCase], selection_why: str,
                servers: list[str]) -> str:
    head = [COMMENT_MARKER, "## A/B benchmark"]
    if doc is None:
        return "\n".join(head + ["", f"Nothing to measure: no server differs between the "
                                     f"two versions ({selection_why}). `--all` measures "
                                     f"every server.", ""])
    ab = doc["ab"]
    side = lambda v: f"`{v['given']}`" + (f" ({v['commit'][:10]}" + (", with uncommitted "  # noqa: E731
                                           "changes" if v.get("dirty") else "") + ")"
                                          if v.get("commit") else "")
    n = counts(rows)
    settings = doc["settings"]
    head += ["", f"Baseline (A) {side(ab['baseline'])}, candidate (B) {side(ab['candidate'])}; "
                 f"servers: {', '.join(servers)} ({selection_why}).",
             f"{settings['repeat'] // 2} rounds of ABBA / BAAB blocks, {settings['repeat']} "
             f"samples of {settings['duration']:g} s per version, in one sitting on "
             f"{doc['environment'].get('machine_id')}; run `{doc['run_id']}`.", "",
             f"**{n['broken']} broken, {n['slower']} slower, {n['faster']} faster, "
             f"{n['unchanged']} unchanged, {n['not comparable']} not comparable.**", ""]
    ordered = sorted(rows, key=lambda r: ORDER.index(r.verdict))
    changes = dependency_changes(doc, servers)
    with_counts = any(f.figure in counted.COUNTED for r in rows for f in r.figures)
    body = tabulate([_row(r, changes, with_counts) for r in ordered], headers(with_counts),
                    tablefmt="pipe", disable_numparse=True)
    foot = ["", f"A change counts when a paired t test over the blocks gives p < {ALPHA:g} "
                "and it exceeds the threshold: the A/A noise of this sitting (the median "
                "difference of two back-to-back samples of one version) over the square "
                f"root of the rounds, and at least {MIN_EFFECT[RPS]:.0%} (req/s), "
                f"{MIN_EFFECT[P99]:.0%} (p99), {MIN_EFFECT[COST]:.0%} (cost: the server's "
                f"CPU-µs per request) or {MIN_EFFECT[ERROR_RATE] * 100:g} points "
                "(error rate). Changes are B against A; for req/s lower is worse, for the "
                "others higher."]
    if with_counts:
        foot += ["", "Instructions and system calls per request (--instructions) are counted, "
                     "not sampled: each version's counts (A B B A, each a fresh start) differ "
                     "by the spread shown in its figures, and a change counts when it "
                     f"exceeds {counted.DEFAULT_THRESHOLDS[counted.INSTRUCTIONS]:.1%} "
                     "(instructions) or "
                     f"{counted.DEFAULT_THRESHOLDS[counted.SYSCALLS]:.0%} (system calls) and "
                     f"{counted.NOISE_MULTIPLE:g} times the larger spread of one version's "
                     "counts. Each part's share is its change per request over the "
                     "baseline's whole."]
        moved = where_lines(ordered)
        if moved:
            foot += ["", "### Where the counts moved", ""] + moved
    return "\n".join(head + [body] + foot + [""])


def to_json(doc: dict | None, rows: list[PairedCase], selection_why: str,
            servers: list[str]) -> str:
    return json.dumps({"run_id": doc["run_id"] if doc else None,
                       "ab": doc["ab"] if doc else None, "selection": selection_why,
                       "servers": servers, "counts": counts(rows),
                       "dependency_changes": dependency_changes(doc, servers) if doc else {},
                       "cases": [r.as_dict() for r in rows]}, indent=2, default=str) + "\n"


FORMATS = {"md": to_markdown, "json": to_json}
