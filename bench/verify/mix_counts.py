"""The mixed test's verification: a burst of requests drawn from the mix's weights (the
same draw as the load's scripts), every answer a 200, and the statements the database
saw for the burst held against what those endpoints must send (bench.core.mix.
statement_bounds, with the manifest's declared update batching). A server that answers
the mix's paths without doing their work, or does more, fails before it is timed."""
from __future__ import annotations

import random
import secrets

from bench.core import mix as mixes
from bench.core import suite
from bench.core.dataset import ROW_COUNT
from bench.core.suite import Declaration
from bench.infra import db
from bench.infra.db import Endpoint
from bench.verify import querycount
from bench.verify.checks import Check, Client, Report
from bench.verify.statements import ALLOWED, count_check, count_problems, measure_test
from bench.verify.suite_counts import rules

BURST = 100               # requests per counted burst: 5 of a 5 % endpoint, on average
CHECK = "queries per mixed request"


def request_of(endpoint: mixes.Endpoint, rng: random.Random) -> tuple[str, str, dict | None]:
    """(method, path, JSON body) of one request of the endpoint, as the load's scripts
    build it (wrk_scripts/requests.lua)."""
    if endpoint.test in ("get user", "update user"):
        path = f"/user/{rng.randint(1, ROW_COUNT)}/"
        if endpoint.test == "get user":
            return "GET", path, None
        return "PATCH", path, {"username": f"mix_{secrets.token_hex(4)}",
                               "email": f"{secrets.token_hex(4)}@verify.example"}
    if endpoint.test in ("plain", "to json"):
        name = endpoint.test.replace(" ", "_")
        return "GET", f"/{name}/?param1=a{rng.randint(0, 999)}&param2=b&param3=c", None
    return "GET", suite.path_for(endpoint.test, endpoint.n), None


def statement_rules(endpoint: mixes.Endpoint, declaration: Declaration | None
                    ) -> tuple[dict[str, tuple[int, int]], float]:
    """(min, max) SELECTs and UPDATEs one request of the endpoint may send, and the
    transaction statements a raw driver may send with it: the rules its own test is
    verified by (bench.verify.statements, bench.verify.suite_counts)."""
    if endpoint.test in ALLOWED:
        return ALLOWED[endpoint.test], 0
    if endpoint.test in suite.SUITE_TESTS:
        return rules(endpoint.test, endpoint.n or 0, declaration or Declaration())
    return {"select": (0, 0), "update": (0, 0)}, 0              # plain, to json


def expected_per_request(drawn: list[mixes.Endpoint], declaration: Declaration | None
                         ) -> tuple[dict[str, tuple[float, float]], float]:
    """What the drawn requests may send per request on average: (min, max) SELECTs and
    UPDATEs, and the transaction statements a raw driver may send."""
    allowed = {"select": [0, 0], "update": [0, 0]}
    transaction = 0.0
    for endpoint in drawn:
        bounds, tx = statement_rules(endpoint, declaration)
        for kind, (low, high) in bounds.items():
            allowed[kind][0] += low
            allowed[kind][1] += high
        transaction += tx
    count = max(len(drawn), 1)
    return ({kind: (low / count, high / count) for kind, (low, high) in allowed.items()},
            transaction / count)


def check_mix(base_url: str, *, token: str, endpoint: Endpoint, mix: mixes.Mix, orm: bool,
              declaration: Declaration | None, report: Report, seed: int = 0,
              burst: int = BURST, timeout: float = 5.0) -> list[Check]:
    """The counted burst of the mix, once (re-sent, the same requests, while a count looks
    too high: other clients of the database server only add); the table restored after."""
    rng = random.Random(seed)
    drawn = [mix.draw(rng) for _ in range(burst)]
    requests = [request_of(e, rng) for e in drawn]
    allowed, transaction = expected_per_request(drawn, declaration)
    client, counter = Client(base_url, token, timeout), querycount.open_counter(endpoint)

    def make_burst(failures: list[str]):
        def run() -> int:
            for method, path, body in requests:
                resp, err = client.request(method, path, json_body=body)
                if resp is None or resp.status_code != 200:
                    failures.append(err or f"{method} {path}: status {resp.status_code}")
            return len(requests)
        return run

    def problems(per: querycount.Counts) -> list[str]:
        return count_problems("mixed request", per, orm, allowed, transaction)

    try:
        window, failures, attempts = measure_test(counter, make_burst, problems)
        report.queries["mixed"] = dict(window.to_dict(), attempts=attempts, mix=mix.identity,
                                       drawn={e.key: drawn.count(e) for e in mix.endpoints})
        return [count_check(CHECK, window, failures, attempts, orm, problems)]
    finally:
        counter.close()
        client.close()
        db.restore(endpoint)
