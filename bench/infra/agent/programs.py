"""Which programs this host has: the tools a run needs, and the database servers'
binaries, which Debian keeps off PATH."""
from __future__ import annotations

import glob
import os
import shutil


def which(tool: str) -> str | None:
    return shutil.which(tool)


def find(candidates: list[str]) -> str | None:
    """The first candidate that is an executable path or a program on PATH."""
    for c in candidates:
        if os.path.isabs(c) and os.access(c, os.X_OK):
            return c
        found = shutil.which(c)
        if found:
            return found
    return None


def postgres_bindir(override: str | None) -> list:
    """[the newest PostgreSQL server binaries' folder or None, whether `override` (the
    host's BENCH_PG_BINDIR) was given but holds no postgres]."""
    if override:
        usable = os.access(os.path.join(override, "postgres"), os.X_OK)
        return [override if usable else None, not usable]
    # Debian keeps them off PATH, one folder per major version
    dirs = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda d: int(d.split("/")[-2]))
    for d in reversed(dirs):
        if os.access(os.path.join(d, "postgres"), os.X_OK):
            return [d, False]
    found = shutil.which("postgres")
    return [os.path.dirname(found) if found else None, False]


def mysqld_binaries() -> list:
    """[the MariaDB/MySQL server binary or None, MariaDB's installer or None]."""
    return [find(["mariadbd", "/usr/sbin/mariadbd", "mysqld", "/usr/sbin/mysqld"]),
            find(["mariadb-install-db", "mysql_install_db"])]
