"""A settings sweep (`--server-env NAME=V1,V2`): every selected framework measured once per
value of an environment variable it reads (GOMAXPROCS, a listener mode, a thread count),
in the same run and the same interleaved rounds, so that the chosen production setting
can be shown against its neighbours rather than asserted.

Each combination is a version of the server in the sense `ab` uses (ServerSpec.arm): the
label `gin@GOMAXPROCS=2` names its rows, results and logs, its manifest env gains the
values (applied last, so they win over the manifest's own), and it is built, verified
and measured like any other server. Reference servers (the ceiling) are not swept.

The harness's own settings (W, the pool, the port: the BENCH_* variables) are not
environment to sweep: they are settings with flags and checks of their own.
"""
from __future__ import annotations

import dataclasses
import itertools
import re

from bench.core.manifest import ServerSpec
from bench.core.settings import SelectionError

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
RESERVED_PREFIX = "BENCH_"


class ServerEnvError(SelectionError):
    """A --server-env that cannot be run; the message names the flag and the fault."""


def parse(items: tuple[str, ...] | list[str]) -> dict[str, tuple[str, ...]]:
    """{NAME: (values...)} in the order given, from "NAME=V1,V2" items."""
    out: dict[str, tuple[str, ...]] = {}
    for item in items:
        name, sep, values = item.partition("=")
        if not sep or not NAME.match(name):
            raise ServerEnvError(f"--server-env {item!r}: expected NAME=VALUE[,VALUE...] with "
                                 f"NAME an environment variable name")
        if name.startswith(RESERVED_PREFIX):
            raise ServerEnvError(f"--server-env {name}: the {RESERVED_PREFIX}* variables are the "
                                 f"harness's own settings (--workers, --db-connections, ...)")
        if name in out:
            raise ServerEnvError(f"--server-env names {name} twice; give its values in one "
                                 f"flag: {name}=A,B")
        found = tuple(v.strip() for v in values.split(","))
        if any(not v or any(c.isspace() for c in v) for v in found):
            raise ServerEnvError(f"--server-env {item!r}: a value is empty or holds whitespace")
        if len(set(found)) != len(found):
            raise ServerEnvError(f"--server-env {item!r} lists a value twice")
        out[name] = found
    return out


def combinations(items: tuple[str, ...] | list[str]) -> list[dict[str, str]]:
    """Every combination of the swept values ([{}] without a sweep: the server as is)."""
    swept = parse(items)
    return [dict(zip(swept, values)) for values in itertools.product(*swept.values())]


def arm_name(combination: dict[str, str]) -> str:
    """"GOMAXPROCS=2" (several: "GOMAXPROCS=2,GOGC=200"), the label's part after `@`."""
    return ",".join(f"{k}={v}" for k, v in combination.items())


def swept(spec: ServerSpec, items: tuple[str, ...] | list[str]) -> list[ServerSpec]:
    """The versions of a framework a run measures: itself without a sweep, else one per
    combination, with that environment and the label id@NAME=V."""
    if spec.reference or not items:
        return [spec]
    return [dataclasses.replace(spec, arm=arm_name(c), env={**spec.env, **c})
            for c in combinations(items)]
