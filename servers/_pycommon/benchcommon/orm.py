"""ORM repository: SQLAlchemy 2 asyncio (asyncpg / aiomysql dialects).

get user    = session.get(User, id)                           -> one SELECT
update user = ORM-enabled update(User)...returning(User)      -> one UPDATE ... RETURNING (PostgreSQL)
              ORM update, then one ORM select of the row      -> UPDATE + SELECT (MySQL/MariaDB)
queries     = session.get(User, id, populate_existing=True) x N   -> N SELECTs
updates     = session.get x N, then per row: set attributes, session.flush()
                                                              -> N SELECTs, N UPDATEs (ascending id)
fortunes    = session.scalars(select(Fortune))                -> one SELECT
cached      = the process's UserCache, filled by get_user      -> one SELECT per miss
"""
from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, DateTime, Integer, String, URL, func, select, update
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from .cache import UserCache
from .contract import random_username, user_dict, utc_now
from .settings import Settings


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"

    user_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(256))
    email: Mapped[str | None] = mapped_column(String(256))
    # timestamptz on PostgreSQL; DATETIME(6) holding UTC on MySQL (comes back naive).
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    is_archived: Mapped[bool] = mapped_column(Boolean, default=False)


class Fortune(Base):
    __tablename__ = "fortune"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    message: Mapped[str] = mapped_column(String(2048))


def _as_dict(u: User) -> dict[str, Any]:
    return user_dict(u.user_id, u.username, u.email, u.created_at, u.updated_at, u.is_archived)


class OrmRepository:
    def __init__(self, engine: AsyncEngine, mysql: bool) -> None:
        self._engine = engine
        self._mysql = mysql
        # expire_on_commit=False: objects stay readable after the session ends, no
        # lazy refresh.  (With AUTOCOMMIT nothing is committed by the session anyway.)
        self._sessions = async_sessionmaker(engine, expire_on_commit=False)
        if mysql:
            # No RETURNING on MySQL/MariaDB.  synchronize_session=False: the session is
            # new per request and holds no User, so there is nothing to synchronise
            # (the default "auto" would fall back to "fetch", i.e. an extra SELECT
            # *before* the UPDATE).  UTC_TIMESTAMP(6): DATETIME holds UTC whatever
            # the session time zone is.
            self._now = func.utc_timestamp(6)
        else:
            self._now = func.now()
        self.cache = UserCache(self.get_user)

    @classmethod
    async def open(cls, settings: Settings) -> "OrmRepository":
        mysql = settings.db == "mysql"
        url = URL.create(
            "mysql+aiomysql" if mysql else "postgresql+asyncpg",
            username=settings.db_user, password=settings.db_password,
            host=settings.db_host, port=settings.db_port, database=settings.db_name,
            query={"charset": "utf8mb4"} if mysql else {},
        )
        options: dict[str, Any] = {}
        if mysql:
            # In AUTOCOMMIT, SQLAlchemy would still call DBAPI rollback() when a session
            # ends, and PyMySQL/aiomysql send a real ROLLBACK (a round-trip) for it;
            # this documented flag skips it while the connection is in autocommit.
            # (asyncpg's adapter already sends nothing when no transaction is open.)
            options["skip_autocommit_rollback"] = True
        engine = create_async_engine(
            url,
            # The process's share of the connection budget, never exceeded.
            pool_size=settings.pool_size,
            max_overflow=0,
            # Keep connections for the server's life (no recycling, no pre-ping
            # round-trip on checkout).
            pool_recycle=-1,
            pool_pre_ping=False,
            # AUTOCOMMIT: every request is one statement (or UPDATE then read back),
            # like the raw variants and Django's default autocommit: no BEGIN / COMMIT /
            # ROLLBACK round-trips around it.
            isolation_level="AUTOCOMMIT",
            # Nothing to reset on return in autocommit mode.
            pool_reset_on_return=None,
            **options,
        )
        repo = cls(engine, mysql)
        await repo._warm_pool(settings.pool_size)
        return repo

    async def _warm_pool(self, size: int) -> None:
        """Open every pooled connection now: check them all out at once, then return
        them, so the first measured requests never pay for connecting."""
        conns = [self._engine.connect() for _ in range(size)]
        try:
            await asyncio.gather(*(c.start() for c in conns))
        finally:
            await asyncio.gather(*(c.close() for c in conns), return_exceptions=True)

    async def get_user(self, user_id: int) -> dict[str, Any] | None:
        async with self._sessions() as session:
            user = await session.get(User, user_id)
            return None if user is None else _as_dict(user)

    async def update_user(self, user_id: int, username: str, email: str) -> dict[str, Any] | None:
        stmt = (
            update(User)
            .where(User.user_id == user_id)
            .values(username=username, email=email, updated_at=self._now)
            .execution_options(synchronize_session=False)
        )
        async with self._sessions() as session:
            if not self._mysql:
                # One UPDATE ... RETURNING; the ORM builds the User from the row.
                result = await session.execute(stmt.returning(User))
                user = result.scalar_one_or_none()
            else:
                result = await session.execute(stmt)
                if not result.rowcount:        # rows matched (FOUND_ROWS): unknown user
                    return None
                user = await session.get(User, user_id)   # the one SELECT
            return None if user is None else _as_dict(user)

    # The suite: one session per request, each statement awaited before the next.
    async def get_users(self, ids: list[int]) -> list[dict[str, Any]]:
        found = []
        async with self._sessions() as session:
            for user_id in ids:
                # ids repeat: populate_existing makes session.get send its SELECT even
                # when the identity map already holds the User (the contract counts N).
                user = await session.get(User, user_id, populate_existing=True)
                if user is not None:
                    found.append(_as_dict(user))
        return found

    async def update_users(self, ids: list[int]) -> list[dict[str, Any]]:
        """ids ascending and distinct: N session.get, then each User changed and flushed
        on its own (one UPDATE each, in ascending id order). One flush of all N would
        send them as one executemany (asyncpg pipelines it as a batch); per row is the
        contract's per-row mode. AUTOCOMMIT: each UPDATE commits by itself."""
        async with self._sessions() as session:
            users = [await session.get(User, user_id) for user_id in ids]
            users = [u for u in users if u is not None]
            now = utc_now()
            # DATETIME(6) on MySQL holds UTC: bind it naive (the response adds +00:00).
            written_at = now.replace(tzinfo=None) if self._mysql else now
            for user in users:
                user.username = random_username()
                user.updated_at = written_at
                await session.flush()
            # No session.commit(): in AUTOCOMMIT each UPDATE is committed as it runs,
            # and aiomysql would still send a COMMIT for it (a statement the contract
            # does not allow); closing the session sends nothing (see open()).
            return [_as_dict(u) for u in users]

    async def fortune_rows(self) -> list[tuple[int, str]]:
        async with self._sessions() as session:
            fortunes = (await session.scalars(select(Fortune))).all()
            return [(f.id, f.message) for f in fortunes]

    async def close(self) -> None:
        await self._engine.dispose()
