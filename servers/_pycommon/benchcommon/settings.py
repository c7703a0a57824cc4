"""Server settings, read once from the environment the harness passes (servers/README.md)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

DATABASES = ("postgres", "mysql", "none")


@dataclass(frozen=True)
class Settings:
    server_id: str
    host: str
    port: int
    workers: int
    token: str
    db: str                 # "postgres" | "mysql" | "none"
    orm: bool
    db_host: str
    db_port: int
    db_name: str
    db_user: str
    db_password: str
    pool_size: int          # DB connections per process (the budget // workers)
    pool_total: int         # the whole budget, for information

    @property
    def has_db(self) -> bool:
        return self.db != "none"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        db = env.get("BENCH_DB", "none").strip().lower() or "none"
        if db not in DATABASES:
            raise ValueError(f"BENCH_DB must be one of {DATABASES}, got {db!r}")
        default_db_port = "5432" if db == "postgres" else "3306"
        workers = int(env.get("BENCH_WORKERS", "1"))
        pool_size = int(env.get("BENCH_DB_POOL_SIZE", "1"))
        if workers < 1 or pool_size < 1:
            raise ValueError("BENCH_WORKERS and BENCH_DB_POOL_SIZE must be >= 1")
        return cls(
            server_id=env.get("BENCH_SERVER_ID", "unknown"),
            host=env.get("BENCH_HOST", "127.0.0.1"),
            port=int(env.get("BENCH_PORT", "8000")),
            workers=workers,
            token=env.get("BENCH_TOKEN", "hardcoded_token"),
            db=db,
            orm=env.get("BENCH_ORM", "0").strip().lower() in ("1", "true", "yes"),
            db_host=env.get("BENCH_DB_HOST", "127.0.0.1"),
            db_port=int(env.get("BENCH_DB_PORT", default_db_port)),
            db_name=env.get("BENCH_DB_NAME", "webservers_bench"),
            db_user=env.get("BENCH_DB_USER", "bench"),
            db_password=env.get("BENCH_DB_PASSWORD", ""),
            pool_size=pool_size,
            pool_total=int(env.get("BENCH_DB_POOL_TOTAL", str(pool_size * workers))),
        )
