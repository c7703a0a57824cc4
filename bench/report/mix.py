"""The mixed test's table: per mixed case and endpoint, its weight, the share of the
requests it really got, and its own latency percentiles where the generator timed
requests by endpoint (bench.analysis.mix). Reads the stored document only."""
from __future__ import annotations

from bench.analysis.mix import PERCENTILES, endpoint_figures
from bench.report.cost import section_html, section_markdown

HEADERS = ["server", "database", "orm", "generator", "endpoint", "weight", "requests sent",
           *(f"{p} ms" for p in PERCENTILES)]


def explained(profile: dict) -> str:
    return (f"The mixed test ran the profile {profile['name']!r} ({profile['source']}, "
            f"sha256 {profile['sha256'][:12]}): every request's endpoint drawn by weight from "
            f"a seeded generator per client thread. Requests sent: how many the generator "
            f"sent to each endpoint over the case's ok samples, and their share (a sample "
            f"whose shares could not have come from the weights is invalid). Percentiles: "
            f"each endpoint's own, the median over the samples, where the generator times "
            f"requests by endpoint (k6, by a tag per endpoint); wrk counts them but cannot "
            f"time them apart (\"-\"), and its overall percentiles are in the case's row of "
            f"the tables above. Verification held the database's statement counts for a "
            f"burst drawn from the same weights against what those endpoints must send.")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def mix_rows(doc: dict) -> list[list[str]]:
    profile = doc.get("settings", {}).get("mix_profile")
    if not profile:
        return []
    rows = []
    for case in doc["cases"]:
        if case["test"] != "mixed":
            continue
        generator = case.get("key", {}).get("generator", "-")
        for e in endpoint_figures(case, profile):
            share = "-" if e.sent_share is None else f"{e.sent:,} ({e.sent_share:.1%})"
            rows.append([case["server"], case["database"], "orm" if case.get("orm") else "raw",
                         generator, e.title, f"{e.weight_share:.0%}", share,
                         *(_ms(e.latency_ms[p]) for p in PERCENTILES)])
    return rows


def mix_markdown(doc: dict) -> list[str]:
    rows = mix_rows(doc)
    return section_markdown("mixed: each endpoint", rows, HEADERS,
                            explained(doc["settings"]["mix_profile"])) if rows else []


def mix_html(doc: dict) -> list[str]:
    rows = mix_rows(doc)
    return section_html("mixed: each endpoint", rows, HEADERS,
                        explained(doc["settings"]["mix_profile"])) if rows else []
