"""The database suite (CONTRACT.md, section 6): its tests, their `n` levels, and what a
server's manifest declares about how it does the work (`[suite]`).

A declaration is what verification holds the database's own statement counts against:
a server that batches its updates, wraps them in a transaction or pipelines statements
without saying so fails verification, so a table never compares batched work with
per-row work unawares. Declared, it is measured and shown as such.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from math import ceil
from pathlib import Path

# the four tests of the suite, and the `n` each is measured at when --n is not given:
# 20 queries / updates per request is where round trips dominate (TechEmpower's
# highest level was 20 for updates too); `cached` at 100 ids a request, so the
# cache, not the JSON encoding of one row, is what is measured
SUITE_TESTS = ("queries", "updates", "fortunes", "cached")
N_TESTS = ("queries", "updates", "cached")           # the ones with a query parameter n
DEFAULT_N = {"queries": 20, "updates": 20, "cached": 100}
N_MIN, N_MAX = 1, 500
PATHS = {"queries": "/queries/", "updates": "/updates/", "fortunes": "/fortunes/",
         "cached": "/cached/"}
UPDATE_MODES = ("per-row", "batched")


class DeclarationError(ValueError):
    pass


@dataclass(frozen=True)
class Declaration:
    """How one variant (engine x raw/ORM) of a server does the suite's work."""
    updates: str = "per-row"          # "per-row": N single-row UPDATEs; "batched"
    update_batch: int = 0             # rows per UPDATE when batched; 0 = all N in one
    transaction: bool = False         # an explicit BEGIN ... COMMIT around /updates/
    pipelining: bool = False          # statements of a request sent without awaiting each answer
    parallel: bool = False            # a request's statements run on several pool connections at once
    prepared: bool = True             # statements prepared once per connection and reused
    template: str = ""                # the fortunes template engine, e.g. "askama 0.12"
    cache: str = ""                   # the cached test's cache library, e.g. "moka 0.12"

    def update_statements(self, n: int) -> int:
        """UPDATE statements that /updates/?n=N sends under this declaration."""
        if self.updates == "per-row":
            return n
        return 1 if self.update_batch <= 0 else ceil(n / self.update_batch)

    def describe(self) -> str:
        parts = [self.updates if self.updates == "per-row" else
                 f"batched ({'all rows' if self.update_batch <= 0 else self.update_batch} "
                 f"per UPDATE)"]
        parts += [word for flag, word in ((self.transaction, "in a transaction"),
                                          (self.pipelining, "pipelined"),
                                          (self.parallel, "parallel queries")) if flag]
        return ", ".join(parts)

    def public(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


_KEYS = {f.name: f.type for f in fields(Declaration)}
# where a declaration may differ: by variant, then by engine, then by both (later wins)
_SCOPES = ("raw", "orm", "postgres", "mysql", "postgres-raw", "postgres-orm",
           "mysql-raw", "mysql-orm")


def _apply(base: Declaration, table: dict, where: str) -> Declaration:
    changes = {}
    for key, value in table.items():
        if key in _SCOPES:
            continue
        if key not in _KEYS:
            raise DeclarationError(f"{where}: unknown key {key!r}; known: "
                                   f"{', '.join(_KEYS)} and the tables {', '.join(_SCOPES)}")
        expected = {"str": str, "int": int, "bool": bool}[_KEYS[key]]
        if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
            raise DeclarationError(f"{where}: {key} must be a {expected.__name__}")
        changes[key] = value
    decl = replace(base, **changes)
    if decl.updates not in UPDATE_MODES:
        raise DeclarationError(f"{where}: updates must be one of {', '.join(UPDATE_MODES)}")
    if decl.update_batch < 0:
        raise DeclarationError(f"{where}: update_batch must be 0 (all rows) or more")
    return decl


def parse(table: dict | None, path: Path) -> dict[tuple[str, bool], Declaration] | None:
    """`[suite]` of a manifest, resolved for every (engine, orm) pair; None when the
    server declares nothing (it does not implement the suite)."""
    if table is None:
        return None
    where = f"{path}: [suite]"
    if not isinstance(table, dict):
        raise DeclarationError(f"{where} must be a table")
    for scope in _SCOPES:
        if scope in table and not isinstance(table[scope], dict):
            raise DeclarationError(f"{where}.{scope} must be a table")
    resolved = {}
    base = _apply(Declaration(), table, where)
    for engine in ("postgres", "mysql"):
        for orm in (False, True):
            kind = "orm" if orm else "raw"
            decl = base
            for scope in (kind, engine, f"{engine}-{kind}"):
                decl = _apply(decl, table.get(scope, {}), f"{where}.{scope}")
            resolved[(engine, orm)] = decl
    return resolved


def clamp(n: int) -> int:
    return max(N_MIN, min(N_MAX, n))


def path_for(test: str, n: int | None) -> str:
    return PATHS[test] + (f"?n={n}" if n is not None else "")


def title(test: str, n: int | None) -> str:
    """A test as the tables name it, with its level: "queries n=20"."""
    return test if n is None else f"{test} n={n}"


def level_problem(n_levels, tests) -> str | None:
    """What is wrong with --n's levels for these --tests (None: nothing)."""
    if n_levels is None:
        return None
    if len(set(n_levels)) != len(n_levels):
        return f"--n lists a value twice: {','.join(map(str, n_levels))}"
    wrong = [n for n in n_levels if not N_MIN <= n <= N_MAX]
    if wrong:
        return (f"--n {','.join(map(str, wrong))}: n is {N_MIN} to {N_MAX} (the contract "
                f"clamps anything else, so another value would measure a level that is not "
                f"the one stored)")
    if not set(tests) & set(N_TESTS):
        return (f"--n applies to {', '.join(N_TESTS)}; none of them is among --tests "
                f"{','.join(tests)}")
    return None
