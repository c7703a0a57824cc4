"""The result tables as data, built once from a stored results document.

Never re-runs anything. Every verdict is recomputed from the stored samples
(`bench.analysis`), so old results are judged by today's rules. Rows are ranked by
median req/s; rows that are not "ok" (errors over the threshold, failed verification, a
server that did not start, an interrupted run) are kept after the ranked rows with their
reason. Each exporter in `bench.report.formats` only changes the syntax of these rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.analysis import statistics
from bench.analysis.knee import RatePoint, knee
from bench.analysis.statistics import Spread
from bench.core import suite, workloads
from bench.core.conformance import cell as conformance_cell, endpoint, failed_checks
from bench.core.protocols import HTTP2
from bench.report.workloads import ENCODED, not_supported_in, workload_notes
from bench.core.settings import KNOWN_TESTS, DEFAULT_CLOSED_LOOP, DEFAULT_OPEN_MODEL, \
    NO_DB_TESTS, format_cpu_list

CONTRACT_COLUMNS = ["test_name", "webserver_name", "database", "orm", "req/sec",
                    "latency_p50", "latency_p75", "latency_p90", "latency_p99"]
PERCENTILES = ("p50", "p75", "p90", "p99")


@dataclass
class Row:
    test: str
    server: str
    database: str              # "None" for the tests without a database, as the contract says
    orm: str
    status: str
    reason: str | None
    rps: Spread
    latency_ms: dict           # each percentile: merged, or the median over samples
    tie: bool | None = None    # CI overlaps the ranked row above
    unstable: bool = False
    client_bound: bool = False
    resources: dict = field(default_factory=dict)
    error_rate: float | None = None
    relative: float | None = None      # median / the best ranked median of the table
    notes: list[int] = field(default_factory=list)    # numbers of the table's notes
    reference: bool = False            # a reference server (the ceiling), not a framework
    of_ceiling: float | None = None    # median / the reference server's median
    n: int | None = None               # the suite's rows per request; None for other tests
    # HTTP conformance verdicts of the endpoint the load hit (check -> verdict); None
    # when the run recorded none (older runs, --no-verify)
    conformance: dict | None = None

    # where latency_ms comes from: "merged" (the samples' histograms merged, with 95 %
    # intervals and a percentile curve) or "median of samples" (bench.analysis.latency)
    latency_source: str = "median of samples"
    latency_ci_ms: dict = field(default_factory=dict)
    latency_curve: list = field(default_factory=list)   # [[percentile, ms], ...]

    @property
    def ranked(self) -> bool:
        return self.status == "ok" and self.rps.median is not None


@dataclass
class Table:
    test: str
    title: str
    load: dict                 # the case key's load parameters shared by the rows
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ceiling: str | None = None         # the reference server the rows are a fraction of
    ceiling_client_bound: bool = False  # ...and whether the load generator set its figure
    n: int | None = None               # the suite level every row was measured at

    @property
    def client_bound(self) -> list[str]:
        return [r.server for r in self.rows if r.ranked and r.client_bound]

    @property
    def ties(self) -> int:
        return sum(1 for r in self.rows if r.tie)


def load_params(case: dict) -> tuple:
    """(connections, connection mode, proxy) of a closed-loop case (older results have no
    proxy: they ran without one). The mode names the protocol when it is not HTTP/1.1
    over TCP ("keep-alive, h2, 10 streams"): each protocol is a table of its own, and no
    proxy or ceiling table pairs it with an h1 case."""
    key = case["key"]
    mode = key["connection_mode"]
    if key.get("protocol", "h1") != "h1":
        streams = key.get("streams", 1)
        mode += f", {key['protocol']}" + (f", {streams} streams" if streams != 1 else "")
    if key.get("pipeline", 1) != 1:
        mode += pipelined_suffix(key["pipeline"])
    if key.get("encoding"):              # --compression: the Accept-Encoding asked for
        mode += f"{ENCODED}{key['encoding']}"
    if key.get("size"):      # the static test's file, the upload test's body, a message
        mode += f", {key['size']} " + {"static": "file", "websocket": "messages"}.get(
            key["test"], "body")
    return key["connections"], mode, key.get("proxy", "none")


def pipelined_suffix(depth: int) -> str:
    """What a pipelined case's connection mode adds: wrk times a batch, from its write to
    its last answer (bench.core.pipelining)."""
    return f", pipelined {depth} deep (latency per batch)"


def level(case: dict) -> int | None:
    """The database suite's n (rows per request) of a case; None for the other tests and
    for results from before the suite."""
    return (case.get("key") or {}).get("n")


def _group_key(case: dict) -> tuple:
    """What makes a table: test, n, then the load parameters and the load generator (the
    same case measured with wrk and with k6 is two tables, each with its own ceiling)."""
    return case["test"], level(case), *load_params(case), case["key"].get("generator", "wrk")


def _is_open_model(case: dict) -> bool:
    return case["key"].get("rate") is not None


def slug(text: str) -> str:
    """A title as a file name: "queries n=20" -> "queries_n_20"."""
    return "".join(c if c.isalnum() else "_" for c in text).strip("_").lower()


def describe_load(connections: int, mode: str, proxy: str, generator: str | None = None,
                  open_model: bool = False) -> str:
    """The load parameters as a table's title says them; the generator only when it is not
    its model's default (wrk for the closed loop, oha for the open model), so a closed
    loop measured with oha or k6 is told from wrk's."""
    text = f"{connections} connections, {mode}"
    text += f", behind {proxy}" if proxy != "none" else ""
    default = DEFAULT_OPEN_MODEL if open_model else DEFAULT_CLOSED_LOOP
    return text + (f", {generator}" if generator not in (None, default) else "")


def _row(case: dict, reference: bool = False) -> Row:
    stats = case.get("stats") or statistics.summarise_case(case["samples"], 0.10)
    no_db = case["test"] in NO_DB_TESTS
    return Row(test=case["test"], server=case["server"],
               database="None" if no_db else case["database"],
               orm="None" if no_db else str(case["orm"]),
               status=stats["status"], reason=stats["reason"],
               rps=Spread(**stats["requests_per_sec"]), latency_ms=stats["latency_ms"],
               unstable=stats["unstable"], client_bound=stats["client_bound"],
               resources=stats["resources"], error_rate=stats["error_rate"],
               reference=reference, n=level(case), **latency_fields(stats))


def latency_fields(stats: dict) -> dict:
    """Where a case's latency comes from, its intervals and curve (merged cases only)."""
    return {"latency_source": stats.get("latency_source", "median of samples"),
            "latency_ci_ms": stats.get("latency_ci_ms") or {},
            "latency_curve": stats.get("latency_curve") or []}


def conformance_of(doc: dict, case: dict, proxy: str) -> dict | None:
    """The verdicts verification recorded for the endpoint this case's load hit."""
    key = f"{case['server']}/{case['database']}/{'orm' if case['orm'] else 'raw'}"
    protocol = case["key"].get("protocol", "h1")
    where = endpoint(proxy, protocol)
    verification = doc.get("verification") or {}
    found = (verification.get(key) or {}).get("conformance", {}).get(where)
    if found is None and proxy != "none" and protocol in HTTP2:
        # h2spec tests the proxy's HTTP/2, the same whichever server is behind it: a
        # server that speaks h2 itself was checked on its own listener, the proxy's
        # verdict is another variant's (bench.verify.protocol_checks)
        found = next((v["conformance"][where] for v in verification.values()
                      if where in (v or {}).get("conformance", {})), None)
    return found


def _table_order(item) -> tuple:
    """The tests in KNOWN_TESTS' order (the contract's four, the suite, mixed), n ascending,
    then connections, mode, and direct before a proxy."""
    (test, n, connections, mode, proxy, generator), _ = item
    return (KNOWN_TESTS.index(test), n or 0, connections, mode, proxy != "none", proxy,
            generator != "wrk", generator)


def is_reference(doc: dict, server: str) -> bool:
    return bool((doc.get("servers") or {}).get(server, {}).get("reference"))


def build_tables(doc: dict) -> list[Table]:
    """One table per test, suite level n and set of closed-loop load parameters
    (connections, connection mode, proxy), in KNOWN_TESTS' order, n ascending. A reference
    server's row is the ceiling of its table: every row says what fraction of it it
    reached, and rows behind a proxy are measured against the direct ceiling at the same
    connections and mode."""
    doc = statistics.refresh(doc)
    groups: dict[tuple, list[dict]] = {}
    for case in doc["cases"]:
        if case["status"] == "pending" or _is_open_model(case):
            continue
        groups.setdefault(_group_key(case), []).append(case)
    points = {k[2:] for k in groups}
    ceilings = _ceilings(doc, groups)
    tables = []
    for (test, n, connections, mode, proxy, generator), cases in sorted(groups.items(),
                                                                        key=_table_order):
        title = workloads.title(suite.title(test, n), cases[0]["key"].get("size"))
        if len(points) > 1:
            title += f" ({describe_load(connections, mode, proxy, generator)})"
        table = Table(test, title, {"connections": connections, "connection_mode": mode,
                                    "generator": generator, "proxy": proxy}, n=n)
        rows = [(_row(c, is_reference(doc, c["server"])), c) for c in cases]
        ranked = sorted((rc for rc in rows if rc[0].ranked), key=lambda rc: -rc[0].rps.median)
        others = [rc for rc in rows if not rc[0].ranked]
        for row, tie in zip([r for r, _ in ranked], statistics.ties([r.rps for r, _ in ranked])):
            row.tie = tie
            row.relative = row.rps.median / ranked[0][0].rps.median
        ceiling = ceilings.get((test, n, connections, mode, generator))
        if ceiling is not None:
            table.ceiling, table.ceiling_client_bound = ceiling.server, ceiling.client_bound
            for row, _ in ranked:
                row.of_ceiling = row.rps.median / ceiling.rps.median
        for row, case in ranked + others:
            row.conformance = conformance_of(doc, case, proxy)
            if row.conformance and failed_checks(row.conformance):
                # measured all the same, and marked (README, "HTTP conformance")
                table.notes.append(f"{row.server}{' behind ' + proxy if proxy != 'none' else ''}"
                                   f": HTTP conformance {conformance_cell(row.conformance)}, "
                                   "see the verification report")
                row.notes.append(len(table.notes))
            for warning in case.get("warnings", []):
                table.notes.append(f"{row.server} ({case['database']}, "
                                   f"{'orm' if case['orm'] else 'raw'}): {warning}")
                row.notes.append(len(table.notes))
            table.rows.append(row)
        tables.append(table)
    workload_notes(doc, tables, lambda case: load_params(case)[1])
    for table, left in not_supported_in(doc, tables):
        nothing = Spread(**{**dict.fromkeys(Spread.__dataclass_fields__), "n": 0})
        table.rows.append(Row(test=left["test"], server=left["server"], database="None",
                              orm="None", status="not supported", reason=left["reason"],
                              rps=nothing, latency_ms={}))
    return tables


def _ceilings(doc: dict, groups: dict[tuple, list[dict]]) -> dict[tuple, Row]:
    """(test, n, connections, mode, generator) -> the best measured reference row,
    measured directly with the same load generator."""
    out: dict[tuple, Row] = {}
    for (test, n, connections, mode, proxy, generator), cases in groups.items():
        if proxy != "none":
            continue
        refs = [r for r in (_row(c, True) for c in cases if is_reference(doc, c["server"]))
                if r.ranked]
        if refs:
            out[(test, n, connections, mode, generator)] = max(refs, key=lambda r: r.rps.median)
    return out


@dataclass
class RateRow:
    """One open-model point: a case measured at a fixed rate."""
    test: str
    server: str
    database: str
    orm: str
    rate: str                  # as asked: "50%" or "2000"
    status: str
    reason: str | None
    asked: float | None        # req/s, median over samples
    achieved: float | None     # req/s sent and answered, median over samples
    not_sent: int | None       # requests the schedule called for that were never sent, summed
    latency_ms: dict           # p50, p90, p99, p99_9 medians
    knee: bool = False         # the knee of this server's curve
    n: int | None = None       # the suite's rows per request; None for other tests
    # from oha's per-request dump (runs with histograms only; None before): responses
    # sent late (summed), and the median over samples of the latency from the send time
    late: int | None = None
    late_tolerance_ms: float | None = None      # sent later than this after due: late
    latency_uncorrected_ms: dict | None = None


@dataclass
class RateTable:
    """Latency against offered load for one test and set of load parameters (oha)."""
    test: str
    title: str
    load: dict
    bound_ms: float
    rows: list[RateRow] = field(default_factory=list)
    knees: dict = field(default_factory=dict)   # "server (database, orm)" -> req/s or None
    # the variants whose every point stayed under the bound: the knee is beyond them
    knee_beyond: set = field(default_factory=set)
    n: int | None = None       # the suite level every point was measured at


def _rate_row(case: dict) -> RateRow:
    stats = case.get("stats") or statistics.summarise_case(case["samples"], 0.10)
    measured = [s for s in case["samples"] if (s.get("summary") or {}).get("rate")]
    rates = [s["summary"]["rate"] for s in measured]
    ok = stats["status"] == "ok"
    median = statistics.pystats.median
    no_db = case["test"] in NO_DB_TESTS
    return RateRow(test=case["test"], server=case["server"],
                   database="None" if no_db else case["database"],
                   orm="None" if no_db else str(case["orm"]), rate=case["key"]["rate"],
                   status=stats["status"], reason=stats["reason"],
                   asked=median([r["asked"] for r in rates]) if rates else None,
                   achieved=median([r["achieved"] for r in rates]) if rates else None,
                   not_sent=sum(r.get("not_sent") or 0 for r in rates) if rates else None,
                   latency_ms=stats["latency_ms"] if ok else {}, n=level(case),
                   **_late_fields(measured, ok))


def _late_fields(measured: list[dict], ok: bool) -> dict:
    """late and the uncorrected percentiles of open-model samples that have them."""
    late = [s["summary"]["rate"].get("late") for s in measured]
    uncorrected = [s["summary"].get("latency_uncorrected_ms") for s in measured]
    if not measured or None in late or None in uncorrected:
        return {}
    return {"late": sum(late),
            "late_tolerance_ms": measured[0]["summary"]["rate"].get("late_tolerance_ms"),
            "latency_uncorrected_ms": {p: _median_or_none([u.get(p) for u in uncorrected])
                                       for p in uncorrected[0]} if ok else {}}


def _median_or_none(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.pystats.median(values) if values else None


def build_rate_tables(doc: dict) -> list[RateTable]:
    """One table per test and load parameters of the open-model cases, each variant's
    points in rate order, with the knee of each variant's curve."""
    doc = statistics.refresh(doc)
    bound = doc["settings"].get("knee_p99_ms") or 20.0
    groups: dict[tuple, list[dict]] = {}
    for case in doc["cases"]:
        if case["status"] != "pending" and _is_open_model(case):
            groups.setdefault(_group_key(case), []).append(case)
    tables = []
    for (test, n, connections, mode, proxy, generator), cases in sorted(groups.items(),
                                                                        key=_table_order):
        table = RateTable(test, f"{suite.title(test, n)}: latency at fixed request rates "
                                f"({describe_load(connections, mode, proxy, generator, True)}, "
                                f"open model)",
                          {"connections": connections, "connection_mode": mode,
                           "generator": generator, "proxy": proxy}, bound,
                          n=n)
        curves: dict[str, list[RateRow]] = {}
        for case in cases:
            row = _rate_row(case)
            curves.setdefault(f"{row.server} ({case['database']}, "
                              f"{'orm' if case['orm'] else 'raw'})", []).append(row)
        for name, rows in sorted(curves.items()):
            rows.sort(key=lambda r: (r.asked is None, r.asked or 0))
            found = knee([RatePoint(r.asked, r.achieved, r.latency_ms.get("p99"),
                                    r.status == "ok") for r in rows if r.asked is not None],
                         bound)
            table.knees[name] = found.asked if found else None
            if found is not None and found.asked == max(r.asked or 0 for r in rows):
                table.knee_beyond.add(name)
            for row in rows:
                row.knee = found is not None and row.asked == found.asked
            table.rows += rows
        tables.append(table)
    return tables


def _threads_phrase(settings: dict) -> str:
    """How many threads a thread-scheduling runtime got (runs before the rule say nothing:
    they gave it W)."""
    rule = settings.get("runtime_threads")
    if rule == "cpus":
        return (" (runtimes that schedule threads: one per usable CPU, at most "
                f"{settings['workers']})")
    if rule == "workers":
        return f" (runtimes that schedule threads: {settings['workers']} threads)"
    return ""


def header_sentence(doc: dict) -> str:
    """One sentence: what machine and which settings produced the tables."""
    env, s, load = doc["environment"], doc["settings"], doc.get("load") or {}
    git = env.get("git") or {}
    commit = (git.get("commit") or env.get("git_commit") or "unknown")[:10]
    dirty = "+uncommitted changes" if git.get("dirty") else ""
    cpus = env.get("cpu_count")
    usable = env.get("cpus_usable")
    cpu_text = f"{cpus} CPUs" if usable in (None, cpus) else f"{usable} of {cpus} CPUs"
    dbs = ", ".join(f"{e} {(d.get('version') or '?').split(' on ')[0]}"
                    for e, d in doc.get("databases", {}).items())
    mode = next((d.get("mode") for d in doc.get("databases", {}).values()), None)
    samples = s.get("repeat", 1)
    return (f"Measured on {env.get('cpu_model') or 'an unknown CPU'} ({cpu_text}, "
            f"{env.get('memory_gb')} GiB, Linux {env.get('kernel')}): "
            f"{s['workers']} workers{_threads_phrase(s)} and {s['db_connections']} DB "
            f"connections per server, "
            f"{load_phrase(load)}, {samples} sample(s) of "
            f"{window_phrase(s)} per case after {s['warmup']:g} s warm-up"
            f"{', preset ' + s['preset'] if s.get('preset') else ''}"
            f"{'; databases: ' + dbs + (' (' + mode + ')') if dbs else ''}; "
            f"commit {commit}{dirty}; run {doc['run_id']}, status {doc['status']}."
            + placement_sentence(load) + memory_cap_sentence(doc) + connections_sentence(doc)
            + unavailable_sentence(doc))


def window_phrase(settings: dict) -> str:
    """What one sample's window was: a time, or k6's --iterations with the time its cap."""
    if settings.get("iterations"):
        return f"{settings['iterations']:,} requests (k6 iterations, at most {settings['duration']:g} s)"
    return f"{settings['duration']:g} s"


def unavailable_sentence(doc: dict) -> str:
    """Servers a run of "all servers" left out because the machine lacked their toolchain."""
    left_out = doc.get("unavailable") or {}
    if not left_out:
        return ""
    return " Not measured, unavailable on this machine: " + "; ".join(
        f"{server} ({why})" for server, why in sorted(left_out.items())) + "."


def load_phrase(load: dict) -> str:
    """"wrk with 1 thread(s) x 64 connections, keep-alive" (per level for a sweep)."""
    levels = load.get("levels") or [{"threads": load.get("threads"),
                                     "connections": load.get("connections")}]
    shape = ", ".join(f"{lv['threads']} thread(s) x {lv['connections']} connections"
                      for lv in levels)
    modes = load.get("connection_modes") or ["keep-alive"]
    text = (f"{load.get('generator', 'wrk')} with {shape}, "
            f"{' and '.join('Connection: close' if m == 'close' else m for m in modes)}")
    proxies = [p for p in load.get("behind") or [] if p != "none"]
    if proxies:
        text += f", {'directly and ' if 'none' in load['behind'] else ''}behind " + \
            " and ".join(proxies)
    open_model = load.get("open_model")
    if open_model:
        version = open_model.get("version") or open_model["generator"]
        if not version.startswith(open_model["generator"]):
            version = f"{open_model['generator']} {version}"
        text += f"; latency at fixed rates ({', '.join(open_model['rates'])}) with {version}"
    return text


def placement_sentence(load: dict) -> str:
    """Which CPUs each side was pinned to ("" when nothing was)."""
    placement = {k: v for k, v in (load.get("placement") or {}).items() if v}
    if not placement:
        return ""
    names = {"server": "servers", "client": "load generator", "db": "databases"}
    return " CPU placement: " + "; ".join(
        f"{names[side]} on CPUs {format_cpu_list(cpus)}" for side, cpus in placement.items()) + "."


def memory_cap_sentence(doc: dict) -> str:
    """The memory caps the servers and the proxies ran under, and the samples the OOM
    killer failed ("" for a run without --server-memory or --proxy-memory)."""
    server, proxy = doc["settings"].get("server_memory"), doc["settings"].get("proxy_memory")
    if not server and not proxy:
        return ""
    samples = [sm for case in doc["cases"] for sm in case["samples"]]
    kinds = {cap.get("kind") for sm in samples
             for cap in ((sm.get("server_process") or {}).get("memory_cap"),
                         sm.get("proxy_memory_cap")) if cap}
    killed = sum("OOM killer" in (sm.get("reason") or "") for sm in samples)
    capped = " and ".join(part for part in (
        f"every server's process tree at {server}" if server else "",
        f"every proxy's at {proxy}" if proxy else "") if part)
    return (f" Memory cap: {capped}"
            f"{' (' + ', '.join(sorted(kinds)) + ')' if kinds else ''}; "
            f"{killed} sample(s) failed by the kernel's OOM killer (the server or proxy "
            f"killed, or a process of it).")


def connections_sentence(doc: dict) -> str:
    """What the databases counted against each server's DB budget after its samples
    ("" for results from before the count was stored)."""
    counted, off = 0, {}
    for case in doc["cases"]:
        for sample in case["samples"]:
            process = sample.get("server_process") or {}
            budget, seen = process.get("db_budget"), process.get("db_connections_seen")
            if budget is None or seen is None:
                continue
            counted += 1
            if seen != budget["total"]:
                key = f"{case['server']} ({case['database']}, {'orm' if case['orm'] else 'raw'})"
                off[key] = f"{key} {seen} of {budget['total']}"
    if not counted:
        return ""
    if not off:
        return (" After every sample the database counted exactly the budget's connections "
                "from the server.")
    return (" Connections the database counted that differ from the budget: "
            + ", ".join(sorted(off.values())) + ".")
