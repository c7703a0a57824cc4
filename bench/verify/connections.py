"""Does the server hold the DB connections it was given? Counted by the database.

Every server gets the same total budget (`--db-connections`), split exactly over its
processes (`ServerSpec.budget`). What a server really opened is read from the database's
own session list, not from the server's word: more than the budget would buy it an
advantage, fewer means its pool opens lazily and the budget is not what it works with.
"""
from __future__ import annotations

from bench.infra import db
from bench.verify.contract import Check


def check_connections(server) -> tuple[Check, dict]:
    """(the check, the figures for the results: budget and the count seen)."""
    budget = server.budget
    seen = db.server_connections(server.endpoint)
    figures = {"budget": budget.as_dict(), "seen": seen}
    split = (f"budget {budget.total} = {budget.processes} process"
             f"{'es' * (budget.processes > 1)} x {budget.per_process}")
    if seen > budget.total:
        return Check("DB connections", False,
                     f"the database sees {seen} connections from the server, over its "
                     f"{split}"), figures
    if seen < budget.total:
        return Check("DB connections", False,
                     f"the database sees {seen} connections from the server, under its "
                     f"{split} (a pool that opens lazily works with fewer than the others)",
                     severity="warning"), figures
    return Check("DB connections", True, f"{seen} connections seen by the database ({split})"), \
        figures
