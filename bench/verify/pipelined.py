"""Verification of the pipelined test (bench.core.pipelining), before any load: the
server answers a batch of the run's depth written at once, every answer the contract's
and in the order asked. A server that fails it is not measured pipelined: a req/s of
answers in the wrong order, or of a connection that closed half-way, means nothing.

The conformance check `pipelining` (three requests, a warning) stays as it is: it is
about HTTP/1.1 as every test uses it; this one is the pipelined test's own, at its depth.
"""
from __future__ import annotations

from bench.verify.checks import Check, make_check
from bench.verify.conformance import PROBLEMS, Target, pipelined_problem

CHECK = "pipelined"


def check_pipelined(base_url: str, token: str, depth: int, timeout: float) -> list[Check]:
    target = Target(base_url, token, timeout)
    label = f"{depth} GET /plain/ requests in one write"
    try:
        wrong = pipelined_problem(target, depth)
    except PROBLEMS as exc:
        wrong = f"{type(exc).__name__}: {exc}"
    return [make_check(CHECK, [f"{label}: {wrong}"] if wrong else [],
                       f"{label}, each answered correctly and in order")]
