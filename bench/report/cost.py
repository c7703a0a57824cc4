"""Cost per request, per role: the CPU-µs each role (server, database, proxy, load
generator) spent per request answered, the machine's busy CPU-µs per request beside
their sum, and each role's memory (PSS). Closed-loop and fixed-rate cases alike: at a
fixed rate every server does the same work, so this is the fair comparison of efficiency.

Reads the stored figures only (bench.analysis.statistics.cost_summary); a run stored
before cost was measured has no rows and nothing is rendered."""
from __future__ import annotations

from tabulate import tabulate

from bench.analysis import statistics
from bench.core.workloads import case_title

ROLES = (("server", "server"), ("database", "db"), ("proxy", "proxy"),
         ("client", "generator"))
HEADERS = ["test", "server", "database", "load", "req/s",
           *[f"{label} CPU-µs/req" for _, label in ROLES], "Σ roles", "machine", "gap",
           "harness",
           "PSS MiB (server/db/proxy)", "accounting"]
EXPLAINED = ("CPU-µs per request: each role's CPU over the measured window divided by the "
             "requests answered in it (median over ok samples). Σ roles is their sum; "
             "machine is the whole machine's CPU per request, every process: "
             "CPUs × elapsed − idle from /proc/stat (its tick-sampled busy fields miss much "
             "of a fixed rate's short bursts); gap = (machine − Σ roles) / machine: what no role used; harness: the "
             "orchestrator's own share of it (its sampler), the rest is other processes "
             "of the machine. accounting: cgroup2 (exact: each role in a cgroup of its "
             "own), procfs (sampled 4×/s; misses processes that exit between readings) or "
             "rusage (the generator's own wait4 figure).")


def _num(value, spec: str = ",.0f") -> str:
    return "-" if value is None else f"{value:{spec}}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} %"


def _load(case: dict) -> str:
    key = case["key"]
    text = f"{key.get('connections')} conn"
    if key.get("rate"):
        text += f", rate {key['rate']}"
    if key.get("proxy") not in (None, "none"):
        text += f", behind {key['proxy']}"
    return text


def cost_rows(doc: dict) -> list[list[str]]:
    rows = []
    for case in statistics.refresh(doc)["cases"]:
        stats = case.get("stats") or {}
        cost = (stats.get("resources") or {}).get("cost")
        if not cost or stats.get("status") != "ok":
            continue
        per_role = [(cost.get(role) or {}).get("cpu_us_per_request") for role, _ in ROLES]
        total = sum(v for v in per_role if v is not None)
        machine = cost.get("machine_cpu_us_per_request")
        gap = (machine - total) / machine * 100 if machine else None
        harness = cost.get("harness_cpu_us_per_request")
        harness_share = harness / machine * 100 if machine and harness is not None else None
        memory = "/".join(_num((cost.get(role) or {}).get("memory_mb"))
                          for role in ("server", "database", "proxy"))
        accounting = ", ".join(f"{label} {cost[role]['accounting']}" for role, label in ROLES
                               if role in cost)
        rows.append([case_title(case), case["server"], case["database"], _load(case),
                     _num((stats.get("requests_per_sec") or {}).get("median")),
                     *[_num(v) for v in per_role], _num(total), _num(machine),
                     _percent(gap), _percent(harness_share), memory,
                     accounting])
    return rows


def section_markdown(title: str, rows: list[list[str]], headers: list[str],
                     explained: str) -> list[str]:
    """A table of the run as a whole (cost per request, cost to run): nothing without rows."""
    if not rows:
        return []
    return [f"## {title}", "", tabulate(rows, headers, tablefmt="pipe",
                                        disable_numparse=True), "", explained, ""]


def section_html(title: str, rows: list[list[str]], headers: list[str],
                 explained: str) -> list[str]:
    if not rows:
        return []
    return [f'<h2 id="{title.replace(" ", "_")}">{title}</h2>',
            tabulate(rows, headers, tablefmt="html", disable_numparse=True),
            f'<p class="caption">{explained}</p>']


def cost_markdown(doc: dict) -> list[str]:
    return section_markdown("cost per request", cost_rows(doc), HEADERS, EXPLAINED)


def cost_html(doc: dict) -> list[str]:
    return section_html("cost per request", cost_rows(doc), HEADERS, EXPLAINED)
