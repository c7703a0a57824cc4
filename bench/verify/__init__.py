"""Verification: the contract check (`contract`) and statements per request (`querycount`)."""
from __future__ import annotations

from typing import Callable


def verifier(token: str) -> Callable:
    """A check for `running_server`: verify the started server against the contract."""
    from bench.verify.contract import verify_server

    def check(server):
        v = server.variant
        return verify_server(server.base_url, server_id=v.server.id, database=v.database,
                             orm=v.orm, token=token, endpoint=server.endpoint)
    return check
