"""What TLS costs and what HTTP/2 gives (`--protocol h1,h1-tls,h2,h2c`, `--streams`), from
stored results only: each variant's case over another protocol against the same variant
over HTTP/1.1 in the same run, same test, connections and connection mode.

- "what TLS costs": h1-tls against h1; "what HTTP/2 gives": h2 and h2c, at each
  `--streams`, against h1.
- The baseline is h1 through the same proxy where the run measured it (`--behind
  nginx`): then the row isolates the protocol. Otherwise it is h1 direct, and the row
  also holds the proxy hop; the "against" column says which.
- The share is paired: each round's req/s over the baseline's in the same round
  (bench.analysis.statistics.paired_ratio), with the 95 % interval of their median.
- CPU-µs per request is the server's plus the proxy's (where TLS and HTTP/2 are
  terminated): the work of answering one request at the edge and behind it.

A view of stored cases, like the proxy cost (bench.report.proxies): never a measurement.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bench.analysis import statistics
from bench.analysis.statistics import Spread
from bench.core import suite
from bench.core.protocols import DEFAULT, HTTP2, TLS
from bench.core.settings import NO_DB_TESTS, NO_PROXY
from bench.report.levels import variant_label
from bench.report.tables import slug

TLS_COSTS, HTTP2_GIVES = "what TLS costs", "what HTTP/2 gives"
KINDS = {TLS_COSTS: TLS - HTTP2, HTTP2_GIVES: HTTP2}
EXPLAINED = {
    TLS_COSTS: "Each row: the variant over HTTP/1.1 on TLS 1.3 against HTTP/1.1 over TCP in "
               "the same run. share: the median of each round's req/s over the baseline's "
               "in the same round, [95 % interval]; p99 and CPU-µs per request (server + "
               "the proxy that terminates TLS) of both, and what TLS adds. against: h1 "
               "through the same proxy isolates TLS; h1 direct also counts the proxy hop. "
               "client-bound: a side whose load generator, not the server, set its figure.",
    HTTP2_GIVES: "Each row: the variant over HTTP/2 (h2: TLS 1.3 and ALPN; h2c: prior "
                 "knowledge over TCP) at a number of concurrent streams per connection, "
                 "against HTTP/1.1 over TCP in the same run. share: the median of each "
                 "round's req/s over the baseline's in the same round, [95 % interval]; "
                 "p99 and CPU-µs per request (server + the terminating proxy) of both. "
                 "against: h1 through the same proxy isolates the protocol; h1 direct also "
                 "counts the proxy hop. client-bound: a side whose load generator set its "
                 "figure."}
HEADERS = ["variant", "protocol", "against", "req/s (against → this)", "share [95 % CI]",
           "p99 ms (added)", "CPU-µs/req (added)", "client-bound"]


@dataclass
class Effect:
    """One variant over one protocol (at one streams count) against its h1 baseline."""
    variant: str
    protocol: str                # "h1-tls", "h2, 10 streams"
    against: str                 # "h1 direct", "h1 behind nginx"
    baseline: dict               # the stored cases, with their stats
    case: dict
    share: Spread                # paired, round by round


@dataclass
class EffectTable:
    kind: str                    # TLS_COSTS or HTTP2_GIVES
    title: str
    effects: list[Effect] = field(default_factory=list)

    @property
    def chart_name(self) -> str:
        return f"{slug(self.title)}.png"


def _protocol(case: dict) -> tuple[str, int, str]:
    key = case["key"]
    return key.get("protocol", DEFAULT), key.get("streams", 1), key.get("proxy", NO_PROXY)


def _label(case: dict) -> str:
    if case["test"] in NO_DB_TESTS:
        return case["server"]
    return variant_label(case["server"], case["database"], case["orm"])


def _rps(case: dict) -> list[float | None]:
    """req/s per sample index (= round), None where the sample is not ok."""
    return [s["summary"]["requests_per_sec"] if s["status"] == "ok" and s.get("summary")
            else None for s in case["samples"]]


def _ok(case: dict) -> bool:
    return (case.get("stats") or {}).get("status") == "ok"


def _baseline(h1: dict[str, dict], proxy: str) -> tuple[str, dict] | None:
    """The h1 case to compare with: through the same proxy, else direct."""
    if proxy in h1:
        return ("h1 direct" if proxy == NO_PROXY else f"h1 behind {proxy}"), h1[proxy]
    if NO_PROXY in h1:
        return "h1 direct", h1[NO_PROXY]
    return None


def protocol_effects(doc: dict) -> list[EffectTable]:
    """The "what TLS costs" and "what HTTP/2 gives" tables of a run, per test, n,
    connections and connection mode; empty without an ok h1 case beside an ok case of
    another protocol."""
    groups: dict[tuple, dict[str, dict]] = {}
    for case in doc["cases"]:
        # the stats build_tables refreshed in place (every report builds its tables from
        # this document first), summarised here only for a document that was not
        case = {**case, "stats": case.get("stats")
                or statistics.summarise_case(case["samples"],
                                             doc["settings"].get("unstable_cv") or 0.10)}
        key = case["key"]
        if key.get("rate") is not None or not _ok(case):
            continue
        where = (case["test"], key.get("n"), key["connections"], key["connection_mode"])
        groups.setdefault(where, {}).setdefault(_label(case), []).append(case)
    out: list[EffectTable] = []
    for kind, wanted in KINDS.items():
        for (test, n, connections, mode), variants in groups.items():
            table = EffectTable(kind, f"{suite.title(test, n)}: {kind} ({connections} "
                                      f"connections, {mode})")
            for variant, cases in variants.items():
                h1: dict[str, dict] = {}
                for case in cases:       # wrk's h1 case first where several generators ran
                    protocol, _, proxy = _protocol(case)
                    if protocol == DEFAULT and (proxy not in h1 or
                                                case["key"].get("generator") == "wrk"):
                        h1[proxy] = case
                for case in cases:
                    protocol, streams, proxy = _protocol(case)
                    base = _baseline(h1, proxy) if protocol in wanted else None
                    if base is None:
                        continue
                    name = protocol + (f", {streams} stream{'s' * (streams != 1)}"
                                       if protocol in HTTP2 else "")
                    # the proxy that terminated it, else the server's own listener
                    name += f", behind {proxy}" if proxy != NO_PROXY else ", native"
                    table.effects.append(Effect(variant, name, base[0], base[1], case,
                                                statistics.paired_ratio(_rps(base[1]),
                                                                        _rps(case))))
            if table.effects:
                out.append(table)
    return out


def _p99(case: dict) -> float | None:
    return (case["stats"].get("latency_ms") or {}).get("p99")


def _cpu_us(case: dict) -> float | None:
    """Server plus proxy CPU-µs per request; None without the server's figure."""
    cost = (case["stats"].get("resources") or {}).get("cost") or {}
    server = (cost.get("server") or {}).get("cpu_us_per_request")
    if server is None:
        return None
    return server + ((cost.get("proxy") or {}).get("cpu_us_per_request") or 0.0)


def _pair(before: float | None, after: float | None, spec: str) -> str:
    if before is None or after is None:
        return "-"
    return f"{before:{spec}} → {after:{spec}} ({after - before:+{spec}})"


def _share(share: Spread) -> str:
    if share.median is None:
        return "-"
    if share.ci_low is None:
        return f"{share.median:.0%}"
    return f"{share.median:.0%} [{share.ci_low:.0%}–{share.ci_high:.0%}]"


def _client_bound(effect: Effect) -> str:
    sides = [f"{side} ({case['key'].get('generator', 'wrk')})"
             for side, case in (("against", effect.baseline), ("this", effect.case))
             if case["stats"].get("client_bound")]
    return ", ".join(sides) or "no"


def effect_cells(table: EffectTable) -> tuple[list[str], list[list[str]]]:
    rows = []
    for e in table.effects:
        rps = f"{e.baseline['stats']['requests_per_sec']['median']:,.0f} → " \
              f"{e.case['stats']['requests_per_sec']['median']:,.0f}"
        rows.append([e.variant, e.protocol, e.against, rps, _share(e.share),
                     _pair(_p99(e.baseline), _p99(e.case), ".1f"),
                     _pair(_cpu_us(e.baseline), _cpu_us(e.case), ".1f"), _client_bound(e)])
    return HEADERS, rows
