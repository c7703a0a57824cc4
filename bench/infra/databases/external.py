"""Existing databases given as DSNs (the `--db-mode external` of the command line): the
harness only creates its two tables there, and never starts, stops or restarts them."""
from __future__ import annotations

from bench.infra import db
from bench.infra.databases.common import ALIVE_TIMEOUT_S, ProvisionError
from bench.infra.host import LOCAL


class ExternalProvider:
    """Existing databases given as DSNs; the harness only creates its two tables there."""
    mode = "external"
    host = LOCAL

    def __init__(self, engines: list[str], dsns: dict[str, str | None],
                 wait_s: float = 10.0):
        self.engines, self.dsns, self.wait_s = engines, dsns, wait_s
        self.endpoints: dict[str, db.Endpoint] = {}

    def start(self) -> dict[str, db.Endpoint]:
        for engine in self.engines:
            dsn = self.dsns.get(engine)
            if not dsn:
                flag = "--postgres-dsn / BENCH_POSTGRES_DSN" if engine == "postgres" \
                    else "--mysql-dsn / BENCH_MYSQL_DSN"
                raise ProvisionError(f"--db-mode external needs a DSN for {engine}: {flag}")
            try:
                ep = db.endpoint_from_dsn(engine, dsn)
                db.wait_until_accepting(ep, timeout=self.wait_s)
            except (ValueError, TimeoutError) as exc:   # both messages are password-free
                raise ProvisionError(f"--db-mode external: {exc}") from None
            db.create_schema(ep)
            self.endpoints[engine] = ep
        return dict(self.endpoints)

    def pids(self, engine: str) -> list[int]:
        return []      # another machine's processes: not ours to read

    def alive(self, engine: str) -> bool:
        ep = self.endpoints.get(engine)
        return ep is not None and db.accepts_connection(ep, ALIVE_TIMEOUT_S)

    def restart(self, engine: str) -> db.Endpoint:
        ep = self.endpoints.get(engine)
        where = ep.where() if ep else engine
        raise ProvisionError(f"an external database cannot be restarted by the harness: "
                             f"{where} stopped answering; restart it and run again")

    def stop(self) -> list[str]:
        return []
