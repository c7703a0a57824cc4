"""The run's counts (`--instructions`) as a table: each counted case's instructions and
system calls per request, their spread over the case's counts, the system calls that
make most of them, a Python server's bytecodes, and how it was counted; cases that
could not be counted, with why. Reads the stored JSON form only."""
from __future__ import annotations

import html

import numpy as np
from tabulate import tabulate

from bench.analysis import instructions as counted
from bench.core import suite

HEADERS = ["test", "server", "database", "orm", "instructions/req", "spread",
           "syscalls/req", "most syscalls", "Python bytecodes/req", "counted", "s per count"]
EXPLAINED = ("Instructions per request: what the server's processes executed over N "
             "requests sent one at a time on one keep-alive connection, after a warm-up, "
             "divided by N, with what each process does by the clock alone (measured in "
             "an idle window after) taken off; the mean of the case's counts, each a "
             "fresh start of its server with one worker. spread: (max - min) / mean over "
             "those counts. syscalls/req: the same requests' system calls (strace), "
             "without those that wait or hand over (futex, sched_yield, nanosleep: how "
             "many a request makes depends on when threads meet); most syscalls: the "
             "three most frequent of all. Neither figure sees time spent waiting "
             "(the database, a lock, the network) or what a cache miss costs: they count "
             "work, not its duration (docs/instructions.md).")


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _syscall_names(count: dict) -> str:
    tables = [(r.get("syscalls") or {}).get("by_name") or {} for r in count["runs"]]
    names = {n for t in tables for n in t}
    means = {n: np.mean([t.get(n, 0.0) for t in tables]) for n in names}
    top = sorted(means.items(), key=lambda kv: -kv[1])[:3]
    return ", ".join(f"{n} {v:.2f}" for n, v in top if v >= 0.005) or "-"


def rows(doc: dict) -> tuple[list[list[str]], list[str]]:
    """The table's rows (one per count key: cases sharing a count appear once) and the
    notes for cases not counted."""
    out, notes, seen = [], [], set()
    for case in doc["cases"]:
        count = counted.count_of(case)
        if not count or count["key"] in seen:
            continue
        seen.add(count["key"])
        title = suite.title(case["test"], (case.get("key") or {}).get("n"))
        head = [title, case["server"], case["database"], "orm" if case["orm"] else "raw"]
        if count["status"] != "ok":
            notes.append(f"{case['server']} {case['database']} {title}: {count['status']}: "
                         f"{count.get('reason') or 'no reason recorded'}")
            out.append(head + [count["status"]] + ["-"] * 6)
            continue
        inst = counted.values(case, counted.INSTRUCTIONS)
        calls = counted.values(case, counted.SYSCALLS)
        spread = counted.relative_spread(inst)
        python = counted.python_totals(case)
        seconds = _mean([r["seconds"].get("total", 0.0) for r in count["runs"]])
        out.append(head + [
            f"{_mean(inst):,.0f}", "-" if spread is None else f"{spread:.3%}",
            "-" if not calls else f"{_mean(calls):.2f}", _syscall_names(count),
            "-" if not python else f"{_mean(python):,.0f}",
            f"{count['method']}, {len(inst)} × {count['requests']}",
            "-" if seconds is None else f"{seconds:.0f}"])
    return out, notes


def instructions_markdown(doc: dict) -> list[str]:
    found, notes = rows(doc)
    if not found:
        return []
    out = ["## Instructions per request", "",
           tabulate(found, HEADERS, tablefmt="pipe", disable_numparse=True), "", EXPLAINED, ""]
    if notes:
        out += ["Not counted:", ""] + [f"- {n}" for n in notes] + [""]
    return out


def instructions_html(doc: dict) -> list[str]:
    found, notes = rows(doc)
    if not found:
        return []
    out = ['<h2 id="instructions">instructions per request</h2>',
           tabulate(found, HEADERS, tablefmt="html", disable_numparse=True),
           f'<p class="caption">{html.escape(EXPLAINED)}</p>']
    if notes:
        out.append("<p>Not counted:</p><ul>" + "".join(f"<li>{html.escape(n)}</li>"
                                                        for n in notes) + "</ul>")
    return out
