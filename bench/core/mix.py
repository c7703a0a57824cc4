"""The `mixed` test's profile: weighted endpoints, read from a versioned TOML file
(`mixes/small-api.toml` by default, `--mix FILE` for another).

Every request of a `mixed` sample draws its endpoint from the weights: wrk's Lua
(wrk_scripts/mixed.lua) and k6's JS (k6_scripts/mixed.js) draw from a generator seeded per
thread or VU, as their other scripts do, and report how many requests each endpoint got.
The harness holds those counts against the weights (`share_problem`), and verification
holds the database's own statement counts for a burst drawn from the same weights against
what those endpoints must cost (bench.verify.mix_counts), so a server that answers the
mix's paths without doing their work fails before it is timed.

Public API::

    MIX_TEST, MIX_TESTS, DEFAULT_PROFILE, FORMAT, MixError
    Endpoint(test, n, weight): .key, .title
    Mix(name, endpoints, source, sha256): .identity, .script_arg, .shares(), .draw(rng),
                                          .public(), .needs_suite
    load(path) -> Mix
    validate(tests, path, generators) -> None
    share_problem(mix, sent) -> str | None
    summary_problem(mix, summary) -> str | None
"""
from __future__ import annotations

import bisect
import hashlib
import math
import random
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bench.core import suite
from bench.core.errors import SelectionError
from bench.paths import REPO

MIX_TEST = "mixed"
# what a profile may draw from: every contract test but `cached`, whose cache is filled
# and checked per case before its window (bench/runner/cache.py), which a mix cannot do
MIX_TESTS = ("get user", "update user", "plain", "to json", "queries", "updates", "fortunes")
DEFAULT_PROFILE = REPO / "mixes" / "small-api.toml"
FORMAT = 1                       # the profile file's format; another is refused
# a drawn share further than this many standard deviations (binomial) from its weight's
# share was not drawn from the weights: 5 sigma is about 1 in 1.7 million per endpoint
SHARE_SIGMAS = 5.0


class MixError(SelectionError):
    """A profile file that cannot be read or is not a valid mix."""


@dataclass(frozen=True)
class Endpoint:
    test: str
    n: int | None
    weight: int

    @property
    def key(self) -> str:
        """How the scripts and the stored counts name it: get_user, queries.5."""
        return self.test.replace(" ", "_") + ("" if self.n is None else f".{self.n}")

    @property
    def title(self) -> str:
        """How the tables name it: get user, queries n=5."""
        return suite.title(self.test, self.n)


@dataclass(frozen=True)
class Mix:
    name: str
    endpoints: tuple[Endpoint, ...]
    source: str                  # the file it was read from
    sha256: str                  # of the file's bytes: two runs ran the same mix or not

    @property
    def identity(self) -> str:
        """What a mixed case's key holds: two runs' mixed cases compare only when their
        profiles' bytes were the same."""
        return f"{self.name}@{self.sha256[:12]}"

    @property
    def script_arg(self) -> str:
        """The weights as wrk's and k6's scripts read them: get_user:60,queries.5:10,..."""
        return ",".join(f"{e.key}:{e.weight}" for e in self.endpoints)

    def shares(self) -> dict[str, float]:
        total = sum(e.weight for e in self.endpoints)
        return {e.key: e.weight / total for e in self.endpoints}

    def draw(self, rng: random.Random) -> Endpoint:
        """One endpoint, drawn by weight (verification's bursts)."""
        cumulative, total = [], 0
        for e in self.endpoints:
            total += e.weight
            cumulative.append(total)
        return self.endpoints[bisect.bisect_right(cumulative, rng.randrange(total))]

    @property
    def needs_suite(self) -> bool:
        """Whether a server needs the database suite's endpoints ([suite]) to run it."""
        return any(e.test in suite.SUITE_TESTS for e in self.endpoints)

    def public(self) -> dict:
        """What results.json stores: enough to know which mix a figure ran."""
        return {"name": self.name, "format": FORMAT, "source": self.source,
                "sha256": self.sha256,
                "endpoints": [{"key": e.key, "test": e.test, "n": e.n, "weight": e.weight}
                              for e in self.endpoints]}


def _endpoint(item, where: str) -> Endpoint:
    if not isinstance(item, dict):
        raise MixError(f"{where} must be a table (test, weight, n)")
    unknown = sorted(set(item) - {"test", "weight", "n"})
    if unknown:
        raise MixError(f"{where}: unknown key(s) {', '.join(unknown)}; known: test, weight, n")
    test, weight, n = item.get("test"), item.get("weight"), item.get("n")
    if test not in MIX_TESTS:
        raise MixError(f"{where}: test {test!r} cannot be in a mix; valid: "
                       f"{', '.join(MIX_TESTS)} (cached's cache is filled per case)")
    if type(weight) is not int or weight < 1:
        raise MixError(f"{where}: weight must be a whole number >= 1, got {weight!r}")
    if test in suite.N_TESTS:
        n = suite.DEFAULT_N[test] if n is None else n
        if type(n) is not int or not suite.N_MIN <= n <= suite.N_MAX:
            raise MixError(f"{where}: n must be a whole number from {suite.N_MIN} to "
                           f"{suite.N_MAX}, got {n!r}")
    elif n is not None:
        raise MixError(f"{where}: {test} takes no n (only {', '.join(suite.N_TESTS)} do)")
    return Endpoint(test, n, weight)


def load(path: str | Path) -> Mix:
    """The profile in `path`, checked; MixError says what is wrong and where."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MixError(f"--mix {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        table = tomllib.loads(data.decode())
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise MixError(f"--mix {path}: not a TOML file: {exc}") from None
    if table.get("format") != FORMAT:
        raise MixError(f"--mix {path}: format must be {FORMAT} (this harness's profile "
                       f"format), got {table.get('format')!r}")
    unknown = sorted(set(table) - {"format", "name", "endpoints"})
    if unknown:
        raise MixError(f"--mix {path}: unknown key(s) {', '.join(unknown)}; known: format, "
                       f"name, endpoints")
    name = table.get("name", path.stem)
    items = table.get("endpoints")
    if not isinstance(name, str) or not name:
        raise MixError(f"--mix {path}: name must be a non-empty string")
    if not isinstance(items, list) or not items:
        raise MixError(f"--mix {path}: no [[endpoints]]: a mix draws from at least one")
    endpoints = tuple(_endpoint(item, f"--mix {path}: endpoint {i}")
                      for i, item in enumerate(items, 1))
    keys = [e.key for e in endpoints]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        raise MixError(f"--mix {path}: {', '.join(twice)} listed twice (give one weight)")
    return Mix(name, endpoints, _shown(path), hashlib.sha256(data).hexdigest())


def _shown(path: Path) -> str:
    """The file as stored: relative to the repository when it is in it (the same on every
    machine), else as given."""
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


# the generators that can draw a weighted mix per request: wrk's Lua and k6's JS (oha sends
# one method and one body file for a whole run; h2load a list of GETs)
MIX_GENERATORS = ("wrk", "k6")


def validate(tests, path: str | None, generators) -> None:
    """--mix and the mixed test, before anything runs: the profile readable and valid,
    and each generator that would run it (`generators`) able to draw it."""
    if MIX_TEST not in tests:
        if path is not None:
            raise MixError(f"--mix {path} is the mixed test's profile, and --tests "
                           f"{','.join(tests)} has no mixed")
        return
    load(path or DEFAULT_PROFILE)
    unable = sorted(set(generators) - set(MIX_GENERATORS))
    if unable:
        raise MixError(f"the mixed test draws each request's endpoint from weights, which "
                       f"{', '.join(unable)} cannot (one method and body for a whole run): "
                       f"use --generator {' or '.join(MIX_GENERATORS)} (k6 for --rate)")


def share_problem(mix: Mix, sent: dict[str, int]) -> str | None:
    """Whether the requests each endpoint got (`sent`, by key) could have been drawn from
    the weights: each count within SHARE_SIGMAS binomial standard deviations (and one
    request per thread's first call) of its share of the total."""
    total = sum(sent.get(key, 0) for key in mix.shares())
    if total == 0:
        return None                        # nothing was sent: the error rate says so
    strays = sorted(set(sent) - set(mix.shares()))
    if strays:
        return f"the generator sent endpoints the mix does not have: {', '.join(strays)}"
    off = []
    for key, share in mix.shares().items():
        count = sent.get(key, 0)
        sigma = math.sqrt(total * share * (1 - share))
        if abs(count - total * share) > SHARE_SIGMAS * sigma + 1:
            off.append(f"{key} {count} of {total} ({count / total:.1%}, weight {share:.1%})")
    if off:
        return (f"the request stream did not follow the mix {mix.name!r}: "
                + "; ".join(off))
    return None


def summary_problem(mix: Mix, summary: dict) -> str | None:
    """What makes a mixed sample's load summary no measure of the mix: no count per
    endpoint from the generator, or counts that were not drawn from the weights."""
    endpoints = summary.get("endpoints")
    if not isinstance(endpoints, dict):
        return "the generator reported no requests per endpoint, so the mix is not known to have run"
    return share_problem(mix, {key: figures.get("sent", 0) for key, figures in endpoints.items()})
