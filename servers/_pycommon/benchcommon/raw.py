"""Raw-driver repositories: asyncpg (PostgreSQL) and aiomysql (MySQL/MariaDB).

One pool per process, min size = max size = BENCH_DB_POOL_SIZE, so every connection
is opened at start-up (the first measured requests never pay for connecting) and the
per-process share of the connection budget is never exceeded.  Only bound parameters.
Both return the contract's user object (a dict) or None for an unknown user.
"""
from __future__ import annotations

import asyncio
from typing import Any

from .cache import UserCache
from .contract import random_username, user_dict, utc_now
from .settings import Settings

# At shutdown a pool waits for connections still checked out by requests that were cut
# off; never let that hold a stop for more than this (then connections are dropped).
CLOSE_TIMEOUT = 2.0

_COLUMNS = "user_id, username, email, created_at, updated_at, is_archived"
FORTUNES = "SELECT id, message FROM fortune"


def _written(row: Any, username: str, now: Any) -> dict[str, Any]:
    """/updates/: the row as read, with the username and updated_at just written."""
    return user_dict(row[0], username, row[2], row[3], now, row[5])


class PostgresRepository:
    # get user: exactly one SELECT by primary key.
    GET = f"SELECT {_COLUMNS} FROM users WHERE user_id = $1"
    # update user: one UPDATE ... RETURNING (no second round-trip); no row -> None.
    UPDATE = (f"UPDATE users SET username = $2, email = $3, updated_at = now() "
              f"WHERE user_id = $1 RETURNING {_COLUMNS}")
    # /updates/: one single-row UPDATE per user, updated_at bound (taken in the server).
    UPDATE_ROW = "UPDATE users SET username = $1, updated_at = $2 WHERE user_id = $3"

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.cache = UserCache(self.get_user)

    @classmethod
    async def open(cls, settings: Settings) -> "PostgresRepository":
        import asyncpg

        async def _no_session_reset(conn: Any) -> None:
            # asyncpg's default reset on release runs "SELECT pg_advisory_unlock_all();
            # CLOSE ALL; UNLISTEN *; RESET ALL" - one extra round-trip per request.  This
            # app never changes session state (no SET, LISTEN, advisory lock or cursor),
            # so there is nothing to reset; asyncpg still rolls back a transaction left
            # open and clears listeners before calling this.
            return None

        pool = await asyncpg.create_pool(
            host=settings.db_host, port=settings.db_port, database=settings.db_name,
            user=settings.db_user, password=settings.db_password,
            # min = max: all connections opened now, never more than the budget.
            min_size=settings.pool_size, max_size=settings.pool_size,
            # 0 = keep idle connections open (the default closes them after 300 s,
            # and the next request would pay for reconnecting).
            max_inactive_connection_lifetime=0,
            reset=_no_session_reset,
        )
        return cls(pool)

    async def get_user(self, user_id: int) -> dict[str, Any] | None:
        # Pool.fetchrow: acquire, run the (cached, prepared) statement, release.
        row = await self._pool.fetchrow(self.GET, user_id)
        return None if row is None else user_dict(*row)

    async def update_user(self, user_id: int, username: str, email: str) -> dict[str, Any] | None:
        row = await self._pool.fetchrow(self.UPDATE, user_id, username, email)
        return None if row is None else user_dict(*row)

    # The suite: one connection per request, each statement awaited before the next
    # (asyncpg prepares each statement once per connection and reuses it).
    async def get_users(self, ids: list[int]) -> list[dict[str, Any]]:
        async with self._pool.acquire() as conn:
            rows = [await conn.fetchrow(self.GET, user_id) for user_id in ids]
        return [user_dict(*row) for row in rows if row is not None]

    async def update_users(self, ids: list[int]) -> list[dict[str, Any]]:
        """ids ascending and distinct: N SELECTs, then N UPDATEs in that order, in
        autocommit (each statement its own implicit transaction)."""
        async with self._pool.acquire() as conn:
            rows = [await conn.fetchrow(self.GET, user_id) for user_id in ids]
            now = utc_now()
            written = []
            for row in rows:
                if row is None:
                    continue
                username = random_username()
                await conn.execute(self.UPDATE_ROW, username, now, row[0])
                written.append(_written(row, username, now))
        return written

    async def fortune_rows(self) -> list[Any]:
        return await self._pool.fetch(FORTUNES)

    async def close(self) -> None:
        try:
            await asyncio.wait_for(self._pool.close(), CLOSE_TIMEOUT)
        except Exception:  # noqa: BLE001 - timed out or failed: stopping anyway
            self._pool.terminate()


class MysqlRepository:
    GET = f"SELECT {_COLUMNS} FROM users WHERE user_id = %s"
    # MySQL/MariaDB have no UPDATE ... RETURNING: one UPDATE, then one SELECT.
    # DATETIME holds UTC: UTC_TIMESTAMP(6) does not depend on the session time zone.
    UPDATE = "UPDATE users SET username = %s, email = %s, updated_at = UTC_TIMESTAMP(6) WHERE user_id = %s"
    UPDATE_ROW = "UPDATE users SET username = %s, updated_at = %s WHERE user_id = %s"

    def __init__(self, pool: Any) -> None:
        self._pool = pool
        self.cache = UserCache(self.get_user)

    @classmethod
    async def open(cls, settings: Settings) -> "MysqlRepository":
        import aiomysql
        from pymysql.constants import CLIENT

        pool = await aiomysql.create_pool(
            host=settings.db_host, port=settings.db_port, db=settings.db_name,
            user=settings.db_user, password=settings.db_password,
            # min = max: all connections opened now, never more than the budget.
            minsize=settings.pool_size, maxsize=settings.pool_size,
            # autocommit: each statement commits by itself, no COMMIT round-trip.
            autocommit=True,
            # utf8mb4: any valid Unicode string fits the utf8mb4 table.
            charset="utf8mb4",
            # FOUND_ROWS: the UPDATE's row count is rows *matched*, not rows changed,
            # so "no such user" is told apart from "same values" reliably.
            client_flag=CLIENT.FOUND_ROWS,
            pool_recycle=-1,   # keep connections for the server's life
        )
        return cls(pool)

    async def get_user(self, user_id: int) -> dict[str, Any] | None:
        async with self._pool.acquire() as conn:
            async with conn.cursor() as cur:
                await cur.execute(self.GET, (user_id,))
                row = await cur.fetchone()
        return None if row is None else user_dict(*row)

    async def update_user(self, user_id: int, username: str, email: str) -> dict[str, Any] | None:
        async with self._pool.acquire() as conn:
            async with conn.cursor() as cur:
                matched = await cur.execute(self.UPDATE, (username, email, user_id))
                if not matched:
                    return None          # unknown user: 404 without a SELECT
                await cur.execute(self.GET, (user_id,))
                row = await cur.fetchone()
        return None if row is None else user_dict(*row)

    # The suite: one connection per request, each statement awaited before the next.
    # aiomysql (PyMySQL's protocol) has no server-side prepared statements: each
    # statement is sent as text with its parameters escaped into it by the driver.
    async def _select_rows(self, cur: Any, ids: list[int]) -> list[Any]:
        rows = []
        for user_id in ids:
            await cur.execute(self.GET, (user_id,))
            rows.append(await cur.fetchone())
        return rows

    async def get_users(self, ids: list[int]) -> list[dict[str, Any]]:
        async with self._pool.acquire() as conn:
            async with conn.cursor() as cur:
                rows = await self._select_rows(cur, ids)
        return [user_dict(*row) for row in rows if row is not None]

    async def update_users(self, ids: list[int]) -> list[dict[str, Any]]:
        """ids ascending and distinct: N SELECTs, then N UPDATEs in that order, in
        autocommit. updated_at: DATETIME(6) holds UTC, bound as a naive UTC value."""
        async with self._pool.acquire() as conn:
            async with conn.cursor() as cur:
                rows = await self._select_rows(cur, ids)
                now = utc_now()
                written = []
                for row in rows:
                    if row is None:
                        continue
                    username = random_username()
                    await cur.execute(self.UPDATE_ROW, (username, now.replace(tzinfo=None), row[0]))
                    written.append(_written(row, username, now))
        return written

    async def fortune_rows(self) -> list[Any]:
        async with self._pool.acquire() as conn:
            async with conn.cursor() as cur:
                await cur.execute(FORTUNES)
                return await cur.fetchall()

    async def close(self) -> None:
        self._pool.close()
        try:
            await asyncio.wait_for(self._pool.wait_closed(), CLOSE_TIMEOUT)
        except Exception:  # noqa: BLE001 - timed out or failed: stopping anyway
            self._pool.terminate()
