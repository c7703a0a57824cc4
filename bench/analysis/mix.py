"""Each endpoint of a mixed case, from its stored samples: the share of the requests it
got beside its weight's share, and its latency percentiles where the generator timed
requests by endpoint (k6; wrk counts them but cannot time them apart). Pure: numbers in,
numbers out; bench.report.mix renders them."""
from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from bench.storage import results

PERCENTILES = ("p50", "p90", "p99")


@dataclass(frozen=True)
class EndpointFigures:
    key: str
    title: str
    weight_share: float
    sent: int                        # over the case's ok samples
    sent_share: float | None         # None: nothing was sent
    latency_ms: dict[str, float | None]   # the median over the ok samples that timed it


def endpoint_figures(case: dict, profile: dict) -> list[EndpointFigures]:
    """One row per endpoint of the stored profile (settings.mix_profile), in its order."""
    samples = [s for s in case.get("samples", []) if s.get("status") == results.OK]
    counted = [(s.get("summary") or {}).get("endpoints") or {} for s in samples]
    total_weight = sum(e["weight"] for e in profile["endpoints"]) or 1
    sent = {e["key"]: sum(c.get(e["key"], {}).get("sent", 0) for c in counted)
            for e in profile["endpoints"]}
    total_sent = sum(sent.values())
    rows = []
    for e in profile["endpoints"]:
        timed = [c[e["key"]]["latency_ms"] for c in counted
                 if isinstance(c.get(e["key"], {}).get("latency_ms"), dict)]
        latency = {}
        for p in PERCENTILES:
            values = [t[p] for t in timed if t.get(p) is not None]
            latency[p] = median(values) if values else None
        title = e["test"] if e.get("n") is None else f"{e['test']} n={e['n']}"
        rows.append(EndpointFigures(e["key"], title, e["weight"] / total_weight,
                                    sent[e["key"]],
                                    sent[e["key"]] / total_sent if total_sent else None,
                                    latency))
    return rows
