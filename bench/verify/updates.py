"""After `update user` was measured: the table still holds exactly the contract's rows,
and about as many rows were updated as the requests sent should have touched. Asked of
the database itself, so a server that answered 200 without writing is caught."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from bench.core import dataset
from bench.infra import db


def expected_distinct_rows(requests: int, rows: int = dataset.ROW_COUNT) -> float:
    """How many distinct ids `requests` uniform draws over `rows` ids hit, on average."""
    return rows * (1 - (1 - 1 / rows) ** requests)


@dataclass
class UpdateCheck:
    figures: dict = field(default_factory=dict)   # rows_after, rows_updated, rows_updated_expected
    invalid: str | None = None                     # why the sample is invalid, if it is


def database_clock(endpoint: db.Endpoint) -> datetime:
    """The database's own time, read before the load: rows updated since are this run's."""
    return db.scalar(endpoint, "SELECT CURRENT_TIMESTAMP")


def judge_updates(count: int, updated: int, answered: int, sent: int,
                  connections: int) -> UpdateCheck:
    """Pure: the verdict on the row counts after `answered` PATCH requests got their
    answer, of `sent` handed to the generator (those without an answer may have updated a
    row too)."""
    expected = expected_distinct_rows(answered)
    check = UpdateCheck({"rows_after": count, "rows_updated": updated,
                         "rows_updated_expected": round(expected)})
    if count != dataset.ROW_COUNT:
        check.invalid = f"table has {count} rows after the run, expected {dataset.ROW_COUNT}"
    # requests still in flight when the generator stops are not counted but may have
    # updated a row
    elif updated < 0.9 * expected or updated > min(max(sent, answered) + 2 * connections,
                                                   dataset.ROW_COUNT):
        check.invalid = (f"{updated} rows updated after {answered} answered PATCH requests "
                         f"({sent} sent); about {expected:.0f} expected")
    return check


def check_updates(endpoint: db.Endpoint, since: datetime, *, answered: int, sent: int,
                  connections: int) -> UpdateCheck:
    """Count the rows and the rows updated since `since` (database_clock before the load)."""
    count = db.scalar(endpoint, "SELECT COUNT(*) FROM users")
    if since.tzinfo is None:          # MySQL: naive, in UTC
        since = since.replace(tzinfo=timezone.utc)
    params = (since if endpoint.engine == "postgres" else since.replace(tzinfo=None),)
    updated = db.scalar(endpoint, "SELECT COUNT(*) FROM users WHERE updated_at >= %s", params)
    return judge_updates(count, updated, answered, sent, connections)
