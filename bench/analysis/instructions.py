"""Instructions and system calls per request (`--instructions`): the arithmetic of a
count and the verdicts on it. Pure functions of numbers and stored documents.

A count's window holds two kinds of work: what the requests cost, and what the server's
processes do by the clock (a supervisor polling its workers, a runtime's housekeeping).
The second does not depend on the requests and grows with the window's seconds, which a
busy machine stretches; under valgrind a window lasts 20-50 times longer than the same
requests at full speed, so it would be counted as theirs 20-50 times over. Each process's
rate of it is read from an idle window right after (no request in flight) and its rate
times the counted window's seconds is taken off that process's count (`net`).

A count's verdict needs no significance test: the figure does not move by noise the way
req/s does. A change counts when it is larger than its threshold (0.5 % of instructions
by default) and than NOISE_MULTIPLE times the spread the same code showed in the same
sitting (two counts of each version in `ab`, a calibration's two runs for `compare`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from bench.core.counting import INSTRUCTIONS, SYSCALLS

COUNTED = (INSTRUCTIONS, SYSCALLS)     # as bench.analysis.figures names them too
UNITS_OF = {INSTRUCTIONS: "instructions per request", SYSCALLS: "system calls per request",
            "python": "Python bytecodes per request"}
# the smallest change worth a verdict. Instructions: the 0.5 %, above the A/A
# spread measured per runtime (docs/instructions.md). System calls: whole calls per
# request, a few for most servers (sanic's plain: 3), so one more per request is +30 %;
# what moves them by noise is the clock-driven work the idle window takes off, which
# leaves a few tenths of a per cent: 2 % keeps clear of it.
DEFAULT_THRESHOLDS = {INSTRUCTIONS: 0.005, SYSCALLS: 0.02}
# a verdict needs a change this many times the largest spread one version showed in the
# sitting: two counts give a crude spread, so a margin well above it
NOISE_MULTIPLE = 3.0
# A process whose count over the window is within this share of what it does by the
# clock alone over as long (its idle rate times the window's seconds) did no request
# work that could be told from its clock's: its net is 0, not the difference of two
# clock readings. The clock's own rate moves by a few per cent from one window to the
# next (sanic's supervisor: 1.07-1.13 M instructions a second, its multiprocessing
# manager 0.87-0.91 M), and under valgrind a window lasts long enough for that to be
# 0.4 % of sanic's count: one count of the same code read 0.43 % above the other. The
# cost: request work in such a process, under a tenth of its clock work, is not seen
# (docs/instructions.md says so).
CLOCK_ONLY = 0.10


@dataclass
class NetCount:
    """A window's count with each process's clock-driven work taken off."""
    counted: float
    background: float
    net: float
    processes: list[dict] = field(default_factory=list)
    parts: dict[str, float] = field(default_factory=dict)   # net, per function or syscall


def net(window, idle) -> NetCount:
    """`window`, `idle`: one reading per process (pid, command, count, seconds, parts:
    bench.infra.counters.ProcessCount or alike). A process missing from the idle window
    did nothing by the clock that could be seen; one whose count is its clock's within
    CLOCK_ONLY is all background."""
    idle_by_pid = {r.pid: r for r in idle}
    out = NetCount(0.0, 0.0, 0.0)
    for r in window:
        quiet = idle_by_pid.get(r.pid)
        scale = r.seconds / quiet.seconds if quiet is not None and quiet.seconds > 0 else 0.0
        background = quiet.count * scale if quiet is not None else 0.0
        clock_only = background > 0 and abs(r.count - background) <= CLOCK_ONLY * background
        if clock_only:                       # all of it the clock's (CLOCK_ONLY)
            background = r.count
        out.counted += r.count
        out.background += background
        out.processes.append({"pid": r.pid, "command": r.command[:300], "counted": r.count,
                              "background": round(background, 1),
                              "net": round(r.count - background, 1),
                              "seconds": round(r.seconds, 3), "clock_only": clock_only})
        if clock_only:
            continue
        idle_parts = quiet.parts if quiet is not None else {}
        for name, value in r.parts.items():
            out.parts[name] = out.parts.get(name, 0.0) + value - idle_parts.get(name, 0.0) * scale
    out.net = out.counted - out.background
    return out


def per_request(parts: dict[str, float], requests: int, keep: int | None = None,
                digits: int = 3) -> dict[str, float]:
    """Each part over `requests`, the largest first; `keep`: only that many (a callgrind
    profile has thousands of functions, the stored table its top)."""
    ordered = sorted(parts.items(), key=lambda kv: -abs(kv[1]))
    if keep is not None:
        ordered = ordered[:keep]
    return {name: round(value / requests, digits) for name, value in ordered
            if round(value / requests, digits)}


def count_of(case: dict) -> dict | None:
    """A stored case's count (None: it was not counted)."""
    return case.get("instructions")


def values(case: dict, figure: str) -> list[float]:
    """The figure of each run of an ok count of a stored case ([]: none)."""
    count = count_of(case)
    if not count or count.get("status") != "ok":
        return []
    if figure == INSTRUCTIONS:
        return [float(r["instructions_per_request"]) for r in count["runs"]]
    found = [(r.get("syscalls") or {}).get("per_request") for r in count["runs"]]
    return [float(v) for v in found if v is not None]


def parts(case: dict, figure: str, python: bool = False) -> list[dict[str, float]]:
    """Per run, where the figure went: functions (callgrind's; with `python`, the
    Python functions' bytecodes) or system calls by name."""
    count = count_of(case)
    if not count or count.get("status") != "ok":
        return []
    if figure == SYSCALLS:
        return [(r.get("syscalls") or {}).get("by_name") or {} for r in count["runs"]]
    if python:
        return [(r.get("python") or {}).get("functions") or {} for r in count["runs"]
                if (r.get("python") or {}).get("per_request")]
    return [r.get("functions") or {} for r in count["runs"]]


def python_totals(case: dict) -> list[float]:
    count = count_of(case) or {}
    return [float(r["python"]["per_request"]) for r in count.get("runs", [])
            if (r.get("python") or {}).get("per_request")]


def comparable(base: dict, cand: dict) -> str | None:
    """Why two stored counts are not comparable (None: they are): another method, tool
    version, N, warm-up, worker count, added environment or start command makes other
    figures."""
    a, b = count_of(base) or {}, count_of(cand) or {}
    differ = [f"{k} {a.get(k)!r} vs {b.get(k)!r}" for k in
              ("method", "tool", "requests", "warmup", "workers", "environment",
               "command")
              if a.get(k) != b.get(k)]
    return "counted differently: " + ", ".join(differ) if differ else None


@dataclass
class CountedChange:
    """One counted figure of one case, baseline against candidate."""
    figure: str
    baseline: float | None            # mean over the side's counts
    candidate: float | None
    change: float | None              # relative
    spread: float | None              # the largest relative spread one side showed
    threshold: float                  # what the change had to exceed
    threshold_source: str
    counts: tuple[int, int]
    direction: str | None = None      # "worse" | "better" | None
    reason: str | None = None         # why it was not judged


def relative_spread(values: list[float]) -> float | None:
    """(max - min) / mean of one version's counts; None with fewer than two."""
    if len(values) < 2 or not np.mean(values):
        return None
    return float((max(values) - min(values)) / np.mean(values))


def judge(figure: str, base: list[float], cand: list[float], *, threshold: float,
          source: str = "default") -> CountedChange:
    """The change of the means, judged against the larger of `threshold` and
    NOISE_MULTIPLE times the spread either side showed."""
    row = CountedChange(figure, float(np.mean(base)) if base else None,
                        float(np.mean(cand)) if cand else None, None, None, threshold,
                        source, (len(base), len(cand)))
    if not base or not cand:
        row.reason = "not counted in " + ("either run" if not base and not cand else
                                          "the baseline" if not base else "the candidate")
        return row
    if row.baseline <= 0:
        row.reason = "nothing counted in the baseline"
        return row
    row.change = row.candidate / row.baseline - 1
    spreads = [s for s in (relative_spread(base), relative_spread(cand)) if s is not None]
    row.spread = max(spreads) if spreads else None
    if row.spread is not None and NOISE_MULTIPLE * row.spread > threshold:
        row.threshold, row.threshold_source = NOISE_MULTIPLE * row.spread, "the spread of the counts"
    if abs(row.change) > row.threshold:
        worse = row.change > 0            # more work per request is worse, both figures
        row.direction = "worse" if worse else "better"
    return row


def aa_threshold(first: list[float], second: list[float], floor: float) -> float:
    """A calibration's threshold for one counted figure of one case, from two runs of the
    same code: the floor, 1.5 x the change between them, NOISE_MULTIPLE x the spread
    within either."""
    if not first or not second or not np.mean(first):
        return floor
    observed = abs(float(np.mean(second)) / float(np.mean(first)) - 1)
    spreads = [s for s in (relative_spread(first), relative_spread(second)) if s is not None]
    return max(floor, 1.5 * observed, NOISE_MULTIPLE * max(spreads, default=0.0))


@dataclass
class Part:
    """One function's (or system call's) share of a count's change."""
    name: str
    baseline: float                   # per request
    candidate: float
    delta: float                      # candidate - baseline, per request
    share: float                      # delta over the baseline's total: its part of the change


def where(base: list[dict[str, float]], cand: list[dict[str, float]], base_total: float,
          top: int = 10) -> list[Part]:
    """The `top` parts whose per-request figure changed most between the versions (each
    side the mean over its counts), with their change as a share of the baseline's
    total: "json.dumps +2.4 %" when json.dumps alone added 2.4 % to the whole."""
    if not base or not cand or not base_total:
        return []
    names = {n for table in base + cand for n in table}
    mean = {side: {n: float(np.mean([t.get(n, 0.0) for t in tables])) for n in names}
            for side, tables in (("A", base), ("B", cand))}
    parts = [Part(n, mean["A"][n], mean["B"][n], mean["B"][n] - mean["A"][n],
                  (mean["B"][n] - mean["A"][n]) / base_total) for n in names]
    # a part whose change is not a hundredth of a per cent of the whole is not news
    parts = [p for p in parts if abs(p.share) >= 0.0001]
    return sorted(parts, key=lambda p: -abs(p.delta))[:top]


def describe_where(change: float, parts: list[Part], unit: str = "instructions per "
                   "request") -> str:
    """'+3.1 % instructions per request: json.dumps +2.4 %, Request.__init__ +0.5 %'."""
    listed = ", ".join(f"{short(p.name)} {p.share:+.2%}" for p in parts)
    return f"{change:+.2%} {unit}" + (f": {listed}" if listed else "")


def short(name: str, width: int = 70) -> str:
    """A function's name cut for a table (Rust's generic names run to hundreds of
    characters); the stored tables keep it whole."""
    return name if len(name) <= width else name[:width - 1] + "…"
