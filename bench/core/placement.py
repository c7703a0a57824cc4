"""Where each role runs and what it may use: the CPU lists it is pinned to (--server-cpus,
--client-cpus, --db-cpus) and the memory cap on the server (--server-memory), parsed and
checked here once; bench.infra.seam.pinned and bench.infra.memory_cap apply them.
"""
from __future__ import annotations

import os
import re

from bench.core.errors import SelectionError

MIN_MEMORY_MB = 8          # below this no server here even starts: a typo, not a cap
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(k|m|g|t)?(?:i?b)?\s*$", re.IGNORECASE)
_MIB_PER = {None: 1, "k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 ** 2}


def parse_memory_mb(text: str, flag: str = "--server-memory") -> float:
    """A memory size as MiB: "512M", "512MiB", "1.5G", "300" (MiB). Binary units, as
    cgroups and Docker read them (M = MiB); SelectionError when malformed or too small."""
    match = _SIZE.match(str(text))
    if not match:
        raise SelectionError(f"{flag} {text!r} is not a memory size such as 512M or 2G")
    mb = float(match.group(1)) * _MIB_PER[(match.group(2) or "").lower() or None]
    if mb < MIN_MEMORY_MB:
        raise SelectionError(f"{flag} {text!r} is {mb:g} MiB: a cap must be at least "
                             f"{MIN_MEMORY_MB} MiB")
    return mb


def validate_placement(s) -> None:
    """The CPU lists and the memory cap of a Settings, before anything starts."""
    validate_cpus(s)
    for flag, cap in (("--server-memory", s.server_memory), ("--proxy-memory", s.proxy_memory)):
        if cap is not None:
            parse_memory_mb(cap, flag)


def parse_cpu_list(text: str, flag: str = "CPU list") -> list[int]:
    """A Linux CPU list ("0-3,8") as sorted CPU numbers; SelectionError when malformed."""
    cpus: set[int] = set()
    for part in str(text).split(","):
        part = part.strip()
        try:
            if "-" in part:
                low, high = (int(x) for x in part.split("-", 1))
                if low > high:
                    raise ValueError
                cpus.update(range(low, high + 1))
            else:
                cpus.add(int(part))
        except ValueError:
            raise SelectionError(f"{flag} {text!r} is not a CPU list such as 0-3,8") from None
    if not cpus or min(cpus) < 0:
        raise SelectionError(f"{flag} {text!r} is not a CPU list such as 0-3,8")
    return sorted(cpus)


def validate_cpus(s, usable: list[int] | None = None) -> None:
    """Each side's CPU list must name CPUs this process may use; overlapping sides are
    allowed (a user may mean it) but reported by the run's header."""
    usable = sorted(os.sched_getaffinity(0)) if usable is None else usable
    for side in ("server", "client", "db"):
        text = getattr(s, f"{side}_cpus")
        if text is None:
            continue
        cpus = parse_cpu_list(text, f"--{side}-cpus")
        outside = [c for c in cpus if c not in usable]
        if outside:
            raise SelectionError(
                f"--{side}-cpus {text}: CPU {', '.join(map(str, outside))} is not usable here; "
                f"valid CPUs: {format_cpu_list(usable)}")


def format_cpu_list(cpus: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5"."""
    out, run = [], []
    for cpu in sorted(cpus):
        if run and cpu != run[-1] + 1:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
            run = []
        run.append(cpu)
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)
