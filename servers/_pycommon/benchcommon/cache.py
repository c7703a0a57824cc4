"""/cached/: the process's in-process user cache (cachetools).

cachetools.LRUCache, capacity 10,000 = every row of `users`, so nothing is ever
evicted, and no expiry (LRUCache has none): once an id has been read it is served from
memory with no statement. A miss is filled by the repository's own get_user (one SELECT
by primary key; through the ORM in the ORM variant). One cache per worker process (the
repository is per process); rows changed later by /updates/ or PATCH are not refreshed.
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable

from cachetools import LRUCache

from .contract import ROW_COUNT

CAPACITY = ROW_COUNT

Loader = Callable[[int], Awaitable[dict[str, Any] | None]]


class UserCache:
    def __init__(self, load: Loader) -> None:
        self._users: LRUCache[int, dict[str, Any]] = LRUCache(maxsize=CAPACITY)
        self._load = load

    async def get_many(self, ids: list[int]) -> list[dict[str, Any] | None]:
        found = []
        for user_id in ids:
            user = self._users.get(user_id)
            if user is None:
                user = await self._load(user_id)       # one SELECT per miss
                if user is not None:
                    self._users[user_id] = user
            found.append(user)
        return found
