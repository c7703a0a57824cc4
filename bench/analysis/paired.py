"""The analysis of an A/B run (`ab`): the baseline (A) and the candidate (B) of each case
measured in one sitting, in blocks of four samples (ABBA or BAAB, bench.core.plan).

Pure functions of the stored document. Per block, the difference of the two versions'
mean (log) figure: within a block both versions sit at the same mean time, so a drift of
the machine that is linear over the block cancels, and what drifted between blocks never
enters a difference. The blocks' differences are tested against zero with a one-sample t
test (scipy), and their mean, back on the figure's scale, is the change.

A change is called only when it is significant *and* larger than the sitting's own noise
floor: the typical difference between two back-to-back samples of the *same* version in
the same sitting (each block holds one such A/A pair and one B/B pair), divided by the
square root of the rounds, which is what averaging them leaves of it; never less than the
figure's minimum effect.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from bench.analysis import instructions as counted
from bench.analysis.compare import decide
from bench.analysis.figures import COST, ERROR_RATE, FIGURES, MEMORY, P99, RELATIVE, RPS, \
    START, WORSE_WHEN, sample_value

ALPHA = 0.01
BLOCK = 4                        # samples of a pair per round: ABBA or BAAB
ROUNDS_MIN = 3                   # below it the t test has one degree of freedom: weak
# the smallest change worth a verdict, whatever the noise: a ratio for req/s and p99, an
# absolute share for the error rate. Smaller than compare's defaults: within one sitting
# the sitting's own noise floor, not a fixed guess at it, sets the bar.
# The server's CPU per request (cost) is its own CPU time over the requests it answered:
# it does not move with the client's or the database's pace, so a change of it that the
# paired test finds decisive (p < 0.01) is a change of the server's work. 1 %, not req/s'
# 2 %: a planted 2 % slowdown of a fixture server read as +1.4-1.7 % of cost (and
# -1.2-1.7 % of req/s), which a 2 % bar would miss; its A/A floor there was 1.0-1.9 %
# per sample, 0.4-0.7 % over 8 rounds (scripts/ab_sensitivity.py, docs/versions.md).
MIN_EFFECT = {RPS: 0.02, P99: 0.10, ERROR_RATE: 0.001, COST: 0.01,
              # start-up is wall time (as p99), the peak memory steady (as req/s)
              START: 0.10, MEMORY: 0.02}


@dataclass
class PairedFigure:
    figure: str
    baseline: float | None            # median over the baseline's ok samples
    candidate: float | None
    change: float | None              # relative (req/s, p99) or absolute (error rate)
    ci: tuple[float, float] | None    # 95 % interval of the change
    p_value: float | None
    blocks: int
    noise_floor: float | None         # median |same-version back-to-back difference|
    threshold: float
    weak: bool = False
    direction: str | None = None      # "worse" | "better" | None (no decisive change)


@dataclass
class PairedCase:
    id: str                           # the case id without the version
    server: str
    database: str
    orm: bool
    test: str
    verdict: str                      # slower | faster | unchanged | broken | not comparable
    reason: str | None = None
    figures: list[PairedFigure] = field(default_factory=list)
    # --instructions: where a counted figure that moved went, per figure ("instructions",
    # "python", "syscalls"): the parts whose per-request figure changed most
    where: dict[str, list[counted.Part]] = field(default_factory=dict)

    @property
    def moved(self) -> list[str]:
        return [f.figure for f in self.figures if f.direction]

    def as_dict(self) -> dict:
        return {**asdict(self), "moved": self.moved}


def blocks(doc: dict, case_a: str, case_b: str) -> list[list[tuple[str, dict]]]:
    """The pair's ok samples in the order measured, per block: [(arm, sample), ...]. The
    pair's entries of the stored order come four to a block (bench.core.plan)."""
    by_id = {c["id"]: c for c in doc["cases"]}
    arms = {case_a: "A", case_b: "B"}
    out: list[list[tuple[str, dict]]] = []
    seen = 0
    for entry in doc["schedule"]["order"]:
        case_id, index = entry.rsplit("#", 1)
        if case_id not in arms:
            continue
        if seen % BLOCK == 0:
            out.append([])
        seen += 1
        sample = by_id[case_id]["samples"][int(index)]
        if sample["status"] == "ok" and sample.get("summary"):
            out[-1].append((arms[case_id], sample))
    return out


def _value(sample: dict, figure: str) -> float | None:
    value = sample_value(figure, sample)
    # a figure a sample did not measure (no p99, nothing sent) is missing, not a zero;
    # a log-scale figure of zero has no ratio either
    return None if value is None or (RELATIVE[figure] and value <= 0) else float(value)


def block_difference(block: list[tuple[str, float]], logs: bool) -> float | None:
    """B's mean minus A's mean in one block (of logs: a log ratio); None unless both
    versions have a value."""
    a = [v for arm, v in block if arm == "A"]
    b = [v for arm, v in block if arm == "B"]
    if not a or not b:
        return None
    f = math.log if logs else (lambda x: x)
    return float(np.mean([f(v) for v in b]) - np.mean([f(v) for v in a]))


def same_version_differences(block: list[tuple[str, float]], logs: bool) -> list[float]:
    """|difference| of the two samples of each version in a block (A/A and B/B)."""
    f = math.log if logs else (lambda x: x)
    out = []
    for arm in ("A", "B"):
        values = [v for a, v in block if a == arm]
        if len(values) == 2:
            out.append(abs(f(values[1]) - f(values[0])))
    return out


def judge_figure(figure: str, per_block: list[list[tuple[str, float]]], baseline: list[float],
                 candidate: list[float], alpha: float = ALPHA) -> PairedFigure:
    from scipy import stats as scistats   # imported here: see statistics.median_ci
    logs = RELATIVE[figure]
    diffs = [d for d in (block_difference(b, logs) for b in per_block) if d is not None]
    noise = [d for b in per_block for d in same_version_differences(b, logs)]
    floor = float(np.median(noise)) if noise else None
    to_scale = (lambda x: math.exp(x) - 1) if logs else (lambda x: x)
    threshold = MIN_EFFECT[figure]
    if floor is not None and diffs:
        threshold = max(threshold, to_scale(floor / math.sqrt(len(diffs))))
    row = PairedFigure(figure, float(np.median(baseline)) if baseline else None,
                       float(np.median(candidate)) if candidate else None, None, None, None,
                       len(diffs), to_scale(floor) if floor is not None else None, threshold)
    if not diffs:
        return row
    mean = float(np.mean(diffs))
    row.change = to_scale(mean)
    if len(diffs) < ROUNDS_MIN or np.allclose(diffs, diffs[0]):
        row.weak = len(diffs) < ROUNDS_MIN
        if not row.weak:             # identical differences: no spread to test
            row.ci, row.p_value = (row.change, row.change), 1.0 if mean == 0 else 0.0
    else:
        test = scistats.ttest_1samp(diffs, 0.0)
        row.p_value = float(test.pvalue)
        low, high = test.confidence_interval(0.95)
        row.ci = (to_scale(float(low)), to_scale(float(high)))
    if not row.weak:                 # too few blocks: no verdict at all, not a weak one
        row.direction = decide(row.change, threshold, row.p_value, False, WORSE_WHEN[figure],
                               alpha)
    return row


def analyse_pair(doc: dict, case_a: str, case_b: str, alpha: float = ALPHA) -> PairedCase:
    by_id = {c["id"]: c for c in doc["cases"]}
    a, b = by_id[case_a], by_id[case_b]
    row = PairedCase(case_b.replace(f"{b['server']}/", f"{b['server'].split('@')[0]}/", 1),
                     b["server"].split("@")[0], b["database"], b["orm"], b["test"], "unchanged")
    if a["status"] != "ok":
        row.verdict = "not comparable"
        row.reason = f"{a['status']} on the baseline: {a.get('reason') or ''}".rstrip(": ")
        return row
    if b["status"] != "ok":
        row.verdict = "broken"
        row.reason = f"{b['status']} on the candidate: {b.get('reason') or ''}".rstrip(": ")
        return row
    per_block = blocks(doc, case_a, case_b)
    for figure in FIGURES:
        values = [[(arm, _value(s, figure)) for arm, s in block] for block in per_block]
        values = [[(arm, v) for arm, v in block if v is not None] for block in values]
        side = {arm: [v for block in values for x, v in block if x == arm] for arm in "AB"}
        row.figures.append(judge_figure(figure, values, side["A"], side["B"], alpha))
    _counted(row, a, b)
    worse = [f for f in row.figures if f.direction == "worse"]
    better = [f for f in row.figures if f.direction == "better"]
    row.verdict = "slower" if worse else "faster" if better else "unchanged"
    moved = worse or better
    if moved:
        row.reason = ", ".join(f"{f.figure} {f.change:+.2%}" if f.figure in counted.COUNTED
                               else f"{f.figure} {f.change:+.1%}" if RELATIVE[f.figure]
                               else f"{f.figure} {f.change:+.2%} points" for f in moved)
    weak = [f.figure for f in row.figures if f.weak]
    if weak and not moved:
        row.reason = (f"{len(per_block)} rounds: too few for the test (needs "
                      f"{ROUNDS_MIN}), so no verdict (weak)")
    return row


def _counted(row: PairedCase, a: dict, b: dict) -> None:
    """The counted figures (--instructions) of a pair: each version's counts (A B B A in
    the sitting), judged against their threshold and the spread each version showed;
    for a figure that moved, where it went (bench.analysis.instructions)."""
    if not counted.count_of(a) or not counted.count_of(b):
        return
    differs = counted.comparable(a, b)
    for figure in counted.COUNTED:
        base, cand = counted.values(a, figure), counted.values(b, figure)
        if not base and not cand:
            continue
        judged = counted.judge(figure, base, cand, threshold=counted.DEFAULT_THRESHOLDS[figure])
        if differs:
            judged.direction, judged.reason = None, differs
        row.figures.append(PairedFigure(
            figure, judged.baseline, judged.candidate, judged.change, None, None,
            min(judged.counts), judged.spread, judged.threshold, direction=judged.direction))
        if judged.direction is None:
            continue
        if figure == counted.INSTRUCTIONS:
            row.where[figure] = counted.where(counted.parts(a, figure),
                                              counted.parts(b, figure), judged.baseline)
            python = counted.python_totals(a)
            if python:
                row.where["python"] = counted.where(counted.parts(a, figure, python=True),
                                                    counted.parts(b, figure, python=True),
                                                    float(np.mean(python)))
        else:
            row.where[figure] = counted.where(counted.parts(a, figure),
                                              counted.parts(b, figure), judged.baseline)


def analyse(doc: dict, alpha: float = ALPHA) -> list[PairedCase]:
    """Every pair of the A/B run (doc["ab"]["pairs"]), in the stored order."""
    return [analyse_pair(doc, a, b, alpha) for a, b in doc["ab"]["pairs"]]
