"""What the Python benchmark servers (sanic, aiohttp, fastapi) share, so that each
framework's app file only maps its own request/response objects onto it."""
from __future__ import annotations

from typing import Any, Protocol

from .contract import (ERR_NO_DB, ERR_NOT_FOUND, ERR_TOKEN, InvalidBody, parse_patch_body,
                       parse_user_id, ping_body, plain_body, text_problem, to_json_body,
                       token_ok, user_dict)
from .settings import Settings
from .suite import FORTUNES_TEMPLATE, TEMPLATE_DIR
from . import suite


class Repository(Protocol):
    async def get_user(self, user_id: int) -> dict[str, Any] | None: ...
    async def update_user(self, user_id: int, username: str, email: str) -> dict[str, Any] | None: ...
    # the database suite (see suite.py): ids drawn by the caller
    async def get_users(self, ids: list[int]) -> list[dict[str, Any]]: ...
    async def update_users(self, ids: list[int]) -> list[dict[str, Any]]: ...
    async def fortune_rows(self) -> list[Any]: ...
    async def close(self) -> None: ...


async def open_repository(settings: Settings) -> Repository | None:
    """The process's repository, with its whole pool already connected; None (and no
    connection at all) for BENCH_DB=none."""
    if not settings.has_db:
        return None
    if settings.orm:
        from .orm import OrmRepository
        return await OrmRepository.open(settings)
    if settings.db == "postgres":
        from .raw import PostgresRepository
        return await PostgresRepository.open(settings)
    from .raw import MysqlRepository
    return await MysqlRepository.open(settings)


__all__ = [
    "ERR_NO_DB", "ERR_NOT_FOUND", "ERR_TOKEN", "FORTUNES_TEMPLATE", "InvalidBody",
    "Repository", "Settings", "TEMPLATE_DIR", "suite",
    "open_repository", "parse_patch_body", "parse_user_id", "ping_body", "plain_body",
    "text_problem", "to_json_body", "token_ok", "user_dict",
]
