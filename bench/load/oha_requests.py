"""oha's request streams: the --rand-regex-url pattern of each contract test (the same
endpoints and random parts as wrk_scripts/) and the PATCH bodies of `update user` (its
-Z file). Used by bench.load.oha, which names them as its own.

Public API::

    ID_MAX, PARAM_REGEX, UPDATE_BODY_COUNT
    id_regex(), url_regex(test, base_url, n=None), update_bodies(seed, count)
"""
from __future__ import annotations

import json
import random
import string

from bench.core import suite, workloads
from bench.load.wrk import TEST_SCRIPTS

ID_MAX = 10_000           # user ids 1..ID_MAX, as the contract's table
PARAM_REGEX = "[a-zA-Z0-9]{4,12}"    # wrk_scripts' random_alnum(4, 12)
UPDATE_BODY_COUNT = 10_000           # distinct PATCH bodies oha picks from at random
_ALNUM = string.ascii_letters + string.digits


def id_regex() -> str:
    """A rand_regex pattern for "{id}/" with id exactly uniform over 1..10000.

    rand_regex (oha's --rand-regex-url) picks each alternative of an alternation with
    equal probability, and flattens an alternative that is itself an alternation into its
    parent, so uniformity needs alternatives of equal size that are not bare alternations.
    Here: 100 alternatives of 100 ids each. "N[0-9]{2}/" for N in 1..99 covers 100..9999;
    the last one, "(?:1|2|...|99|10000)/", covers the other 100 ids (its trailing "/" makes
    it a sequence, so it is not flattened; its alternatives are not single characters, so
    regex-syntax does not merge them into one class). Every id then has probability
    1/100 * 1/100 = 1/10000. Checked: 10^6 `oha --dump-urls` draws hit all 10,000 ids,
    chi-square 10035 on 9999 degrees of freedom (tests/integration/test_oha.py).
    """
    blocks = [f"{n}[0-9]{{2}}/" for n in range(1, ID_MAX // 100)]
    rest = [str(i) for i in range(1, 100)] + [str(ID_MAX)]
    return "(?:" + "|".join(blocks + ["(?:" + "|".join(rest) + ")/"]) + ")"


# regex-syntax's meta characters; "." is left alone because oha itself escapes every "."
# of the URL regex (so that a host's dots stay literal) and "\." would become "\\."
_REGEX_META = set("\\+*?()|[]{}^$#&-~")


def _literal(text: str) -> str:
    return "".join("\\" + c if c in _REGEX_META else c for c in text)


def url_regex(test: str, base_url: str, n: int | None = None,
              size: str | None = None) -> str:
    """The --rand-regex-url pattern of one contract test: the request paths of the wrk
    scripts in wrk_scripts/ (same endpoints, same random parts)."""
    if test not in TEST_SCRIPTS:
        raise ValueError(f"unknown test {test!r}; known: {', '.join(TEST_SCRIPTS)}")
    if not base_url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
    base = _literal(base_url.rstrip("/"))
    if test in suite.SUITE_TESTS:           # the server draws the ids: one fixed path
        return base + _literal(suite.path_for(test, n))
    if test in (workloads.STATIC_TEST, workloads.DELAY_TEST):     # one fixed path too
        return base + _literal(workloads.PATHS[test].format(size=size))
    if test not in ("get user", "update user", "plain", "to json"):
        raise ValueError(f"oha cannot send the test {test!r}")
    if test in ("get user", "update user"):
        return f"{base}/user/{id_regex()}"
    endpoint = "plain" if test == "plain" else "to_json"
    params = "&".join(f"param{i}={PARAM_REGEX}" for i in (1, 2, 3))
    return f"{base}/{endpoint}/\\?{params}"


def update_bodies(seed: int, count: int = UPDATE_BODY_COUNT) -> list[str]:
    """PATCH bodies as update_user.lua builds them: a random username of 8-16 ASCII
    letters/digits and a random <8-16 of them>@example.com email.

    oha cannot build a body per request, but `-Z file` sends a line of the file picked at
    random for each request; these are those lines (deterministic for a seed)."""
    rng = random.Random(seed)

    def alnum() -> str:
        return "".join(rng.choice(_ALNUM) for _ in range(rng.randint(8, 16)))

    return [json.dumps({"username": alnum(), "email": alnum() + "@example.com"})
            for _ in range(count)]
