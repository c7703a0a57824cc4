"""Every test `--tests` knows, in one line each: what its requests ask and what they
need, for `run_bench.py list` and the docs. The tests themselves are defined where their
rules live (bench.core.settings, suite, mix, pipelining); tests/unit/test_pipelining.py
checks that this list names exactly those."""
from __future__ import annotations

from bench.core import mix, pipelining, suite

# test -> (what needs to be there, what each request does)
DESCRIPTIONS: dict[str, tuple[str, str]] = {
    "get user": ("database", "GET /user/{id}/, id uniform in 1..10000"),
    "update user": ("database", "PATCH /user/{id}/ with a random username and email"),
    "plain": ("no database", "GET /plain/ with three random ASCII params, echoed as text"),
    "to json": ("no database", "GET /to_json/ with three random ASCII params, as JSON"),
    "queries": ("database suite", f"GET /queries/?n=N: N SELECTs (default n="
                                  f"{suite.DEFAULT_N['queries']})"),
    "updates": ("database suite", f"GET /updates/?n=N: N SELECTs and N UPDATEs (default n="
                                  f"{suite.DEFAULT_N['updates']})"),
    "fortunes": ("database suite", "GET /fortunes/: all rows, one added, sorted, an HTML "
                                   "template"),
    "cached": ("database suite", f"GET /cached/?n=N: N rows from an in-process cache "
                                 f"(default n={suite.DEFAULT_N['cached']})"),
    mix.MIX_TEST: ("database", "each request's endpoint drawn by the weights of --mix "
                               "(default: mixes/small-api.toml)"),
    pipelining.PIPELINED_TEST: ("no database", f"plain's requests, --pipeline of them "
                                               f"written at once on each connection "
                                               f"(default {pipelining.DEFAULT_DEPTH}; wrk)"),
}
