"""The database suite's four endpoints (CONTRACT.md section 6) up to the response body:
n parsed, ids drawn, the repository called. Each framework's app only checks the token
and the database, passes the raw `n` and turns the result into its own response."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .contract import Fortune, distinct_random_ids, parse_n, random_ids, with_extra_fortune

# The fortunes page: one Jinja2 template (autoescaping on in every framework's loader),
# shared by the three apps; variable `fortunes`, a list of Fortune(id, message).
TEMPLATE_DIR = Path(__file__).parent / "templates"
FORTUNES_TEMPLATE = "fortunes.html"


async def queries(repo: Any, raw_n: str | None) -> list[dict[str, Any]]:
    """N SELECTs by primary key, one after another, ids with repeats."""
    return await repo.get_users(random_ids(parse_n(raw_n)))


async def updates(repo: Any, raw_n: str | None) -> list[dict[str, Any]]:
    """N distinct ids, N SELECTs, then N single-row UPDATEs in ascending id order."""
    return await repo.update_users(distinct_random_ids(parse_n(raw_n)))


async def fortunes(repo: Any) -> list[Fortune]:
    """One SELECT of the whole fortune table, plus the in-memory row, sorted by message."""
    return with_extra_fortune(await repo.fortune_rows())


async def cached(repo: Any, raw_n: str | None) -> list[dict[str, Any] | None]:
    """N ids with repeats from the process's cache; a miss costs one SELECT."""
    return await repo.cache.get_many(random_ids(parse_n(raw_n)))
