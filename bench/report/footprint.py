"""The "cost to run" table: per case, how long its server took to start, the memory it
held idle and under load, and what it answered per GiB of that memory and per second of
its CPU (bench.analysis.footprint). Reads the stored figures only; a run stored before
start-up and idle memory were measured shows what it has, "-" for the rest."""
from __future__ import annotations

from bench.analysis import footprint, statistics
from bench.core.workloads import case_title
from bench.analysis.footprint import Spread
from bench.report.cost import section_markdown, section_html

HEADERS = ["test", "server", "database", "orm", "req/s", "start-up to /ping/ ms",
           "to its test's first answer ms", "to ready ms", "idle MiB", "under load MiB (mean / peak)",
           "of which own / files / shmem MiB", "socket buffers MiB (mean / peak)", "req/s per GiB", "requests per CPU-s",
           "memory", "what runs MiB", "build s (cold / the run's)",
           "KiB per connection (connections)"]
# only in a run with --server-memory
CAP_HEADER = "capped cgroup: anon / page cache / sockets / kernel MiB"
EXPLAINED = (
    "Start-up: from the harness's spawn of the server to the first GET /ping/ it answered "
    "as itself (polled every 10 ms), the median [lowest-highest] of the case's samples: "
    "every sample starts its server anew, so each is a cold start; to its test's first "
    "answer: until the case's own endpoint (the first of the paths its load draws, with "
    "the token) first answered 200, asked right after /ping/ (a pool or a template made "
    "on first use shows here; \"-\" for a test that writes, which is not asked twice); "
    "to ready: until the census counted all W workers too. Memory: the server's whole process tree, PSS "
    "(each page shared by several processes split between them) from "
    "/proc/<pid>/smaps_rollup; idle: once ready, before verification or "
    "load sent it anything; under load: read once a second in the measured window, the "
    "median of the samples' means and the highest reading. It is the processes' own "
    "memory; of which: its parts under load (the same readings' means, medians over the "
    "samples), from smaps_rollup's Pss_Anon (the processes' own: heap, stacks), Pss_File "
    "(code, libraries, mapped files) and Pss_Shmem. The kernel's socket buffers and page "
    "cache are not in PSS. Socket buffers: the kernel's memory for the TCP sockets the "
    "server's processes hold (receive queue, write queue and what was reserved ahead for "
    "them, as `ss -tme` reads sock_diag's meminfo: r + w + f), read with each memory "
    "reading, the median of the samples' means and the highest. A run with --server-memory also shows the capped cgroup's own "
    "account at its fullest reading in the window (memory.stat: anon, page cache, sockets, kernel; v1: "
    "rss, cache, kmem.tcp, kmem). req/s per GiB: the median req/s over the peak; requests "
    "per CPU-s: requests answered per second of the server's CPU (its cgroup where it "
    "has one, else the sampled /proc figures). What runs: the size of the files the "
    "server runs from, as its build recorded them (its manifest's artefacts: a binary, "
    "a jar, its own virtualenv, its folder with node_modules; each manifest's notes say "
    "how shared code is counted); \"-\" for a server with no build of its own. Build: the "
    "run's own build of the server (with its caches filled: usually an up-to-date check, "
    "the whole compile the first time on a machine) and, with --cold-build, the same build first from nothing cached (a copy of servers/, "
    "an empty harness cache and empty toolchain caches: dependencies downloaded and "
    "compiled anew, as on a fresh CI runner; bench/infra/cold.py); a shared workspace "
    "(the Rust servers' Cargo workspace) is built whole for each of its servers, so each "
    "shows the whole workspace's cold build."
    " KiB per connection: what load added per open client connection, (the mean under "
    "load - idle + socket buffers' mean) / the connections the generator opened: with "
    "--connections 10000 (the delay test keeps them all waiting at once) it is the cost of "
    "a connection; at 64 it is mostly the cost of the requests in flight.")


def _ms(value: Spread | None) -> str:
    if value is None:
        return "-"
    text = f"{value.median * 1000:,.0f}"
    if value.n > 1:
        text += f" [{value.low * 1000:,.0f}-{value.high * 1000:,.0f}]"
    return text


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _parts(parts: dict | None, names: tuple[str, ...]) -> str:
    if not parts:
        return "-"
    return " / ".join(_mb(parts.get(name)) for name in names)


def _build(fp) -> str:
    if fp.build_warm_s is None:
        return "-"
    cold = "-" if fp.build_cold_s is None else f"{fp.build_cold_s:,.1f}"
    return f"{cold} / {fp.build_warm_s:,.1f}"


def footprint_table(doc: dict) -> tuple[list[str], list[list[str]]]:
    """(headers, rows): the cap's column only when some case ran capped."""
    rows, capped = [], []
    for case in doc["cases"]:
        # the stats build_tables refreshed in place (a report builds its tables from this
        # document first), summarised here only for a document that was not
        if not case.get("stats"):
            case = {**case, "stats": statistics.summarise_case(
                case["samples"], doc["settings"].get("unstable_cv") or 0.10)}
        fp = footprint.case_footprint(case, (doc.get("builds") or {}).get(case["server"]))
        if fp is None:
            continue
        idle = "-" if fp.idle_mb is None else _mb(fp.idle_mb.median)
        rows.append([case_title(case), case["server"], case["database"],
                     "orm" if case.get("orm") else "raw", _num(fp.requests_per_sec),
                     _ms(fp.start_to_ping_s), _ms(fp.start_to_first_answer_s),
                     _ms(fp.start_to_ready_s), idle,
                     f"{_mb(fp.load_mean_mb)} / {_mb(fp.load_peak_mb)}",
                     _parts(fp.load_split_mb, ("anon", "file", "shmem")),
                     "-" if fp.socket_peak_mb is None else
                     f"{fp.socket_mean_mb:,.2f} / {fp.socket_peak_mb:,.2f}",
                     _num(fp.requests_per_sec_per_gib), _num(fp.requests_per_cpu_s),
                     fp.memory_kind or "-", _mb(fp.artefact_mb), _build(fp),
                     "-" if fp.per_connection_kib is None else
                     f"{fp.per_connection_kib:,.1f} ({fp.connections:,})"])
        capped.append(_parts(fp.cap_split_mb, ("anon", "file", "sock", "kernel")))
    if all(cell == "-" for cell in capped):
        return HEADERS, rows
    return HEADERS + [CAP_HEADER], [row + [cell] for row, cell in zip(rows, capped)]


def footprint_markdown(doc: dict) -> list[str]:
    headers, rows = footprint_table(doc)
    return section_markdown("cost to run", rows, headers, EXPLAINED)


def footprint_html(doc: dict) -> list[str]:
    headers, rows = footprint_table(doc)
    return section_html("cost to run", rows, headers, EXPLAINED)
