"""Filling the `cached` test's cache before it is measured.

Every sample starts a fresh server, so its in-process cache starts empty; measured that
way, `cached` would time the fill (one SELECT per id), not the cache. Before the usual
warm-up the harness sends rounds of FILL_ROUND_S seconds of `/cached/?n=FILL_N` at the
case's connections (so every worker process gets its share), counting the SELECTs the
database sees in each round, until a round sends none: every process then has all
10,000 rows. The rounds are stored with the sample (`checks.cache_fill`).

n=100, not the contract's 500: a request must end within its round, or the load
generator drops its connection at the round's end, and a server that cancels a request
whose client went away (Django under ASGI does) never stores what it read. Measured: with
rounds of 1 s of n=500, django_asgi read 3,000 rows a round for 60 rounds and cached
none of them (a request of 500 cold ids took over a second).
"""
from __future__ import annotations

from typing import Callable

from bench.infra.db import Endpoint
from bench.verify import querycount

FILLS_CACHE = ("cached",)
FILL_N = 100                   # ids per request (see above)
FILL_ROUND_S = 2.0             # seconds per round (wrk takes whole seconds)
MAX_ROUNDS = 60                # a cache not full after two minutes does not hold the rows
QUIET = 0.5                    # fewer SELECTs than this in a round: none (counters are integers)
UNCOUNTED_ROUNDS = 10          # where the database cannot count statements cheaply


def fill_cache(run_round: Callable[[], object], endpoint: Endpoint) -> dict:
    """Run rounds until one sends no SELECT; what it took, for the sample's record."""
    counter = querycount.open_counter(endpoint)
    try:
        if isinstance(counter, querycount.PgXactCounter):   # needs 11 s per count
            for _ in range(UNCOUNTED_ROUNDS):
                run_round()
            return {"rounds": UNCOUNTED_ROUNDS, "n": FILL_N, "round_s": FILL_ROUND_S,
                    "selects": None, "full": None,
                    "note": "SELECTs not counted (no pg_stat_statements): fixed rounds"}
        selects: list[int] = []
        for _ in range(MAX_ROUNDS):
            window = querycount.measure(counter, lambda: (run_round(), 1)[1], quiet=False)
            selects.append(round(window.totals.select))
            if window.totals.select < QUIET:
                break
        return {"rounds": len(selects), "n": FILL_N, "round_s": FILL_ROUND_S,
                "selects": selects, "full": selects[-1] < QUIET}
    finally:
        counter.close()


def not_filled(fill: dict | None) -> str | None:
    """Why a sample measured a cache that never filled (it is then invalid), or None."""
    if not fill or fill["full"] is not False:
        return None
    return (f"the cache never filled: {fill['selects'][-1]} SELECTs in the last of "
            f"{fill['rounds']} rounds of /cached/?n={fill['n']} (the contract: none once "
            f"every id is cached; the cache evicts or holds fewer than 10,000 rows)")
