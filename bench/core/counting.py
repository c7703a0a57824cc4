"""Instructions (and system calls) per request: what a count is, in the harness's words.

A count starts a server under a counter (bench.infra.counters), sends it a warm-up of a
case's own requests, zeroes the counters, sends a fixed, seeded sequence of N of the
case's requests over one keep-alive connection, reads the counters, and divides by N.
What the machine's noise moves (other processes, the clock) does not enter it: the same
binary given the same requests executes the same instructions.

This module holds the vocabulary: how a server's manifest says it is counted
(`[instructions]`, `CountSpec`), which cases can be counted, and what a count is asked
to do (`CountPlan`). Nothing here starts a process.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bench.core.errors import SelectionError

# requests counted per case: enough that the per-request figure does not move with the
# few requests a server answers differently (its first on a connection), few enough
# that a case takes well under a minute under valgrind, which runs a server 20-50 times
# slower (sanic's plain: 1,000 requests in 6 s counted)
DEFAULT_REQUESTS = 1000
# requests before the counters are zeroed: caches filled, CPython's adaptive interpreter
# specialised, a connection's first-request work done. After 300, the Python servers'
# first window still read 0.3-0.5 % above the ones after it (gunicorn's, sanic's), nginx's
# and PHP-FPM's 0.1-0.2 %; after 1,300 they agree within 0.06 %. The warm-up runs before
# callgrind's instrumentation is switched on, at valgrind's uninstrumented speed. A runtime
# that compiles while it runs (V8, the JVM) says its own in its manifest.
DEFAULT_WARMUP = 1500
# the seconds of the idle window after the counted one: what each process executes per
# second while no request comes (its timers: a supervisor's poll, a runtime's
# housekeeping) is taken off the counted window's figure; under valgrind a window of
# 1,000 requests lasts 50 times longer than at full speed, so that work, which does not
# depend on the requests, would otherwise be counted as theirs 50 times over
IDLE_WINDOW_S = 5.0
# the worker count a count runs with: every request of the one connection reaches the
# same worker, so the warm-up warms exactly the process that is counted, and the
# server's start under valgrind (each process of it 20-50 times slower) is one worker's
COUNT_WORKERS = 1
# the DB connections the counted server's pool may hold: one request in flight at a
# time needs one; two leave a pool that checks one out while returning another its room
COUNT_DB_CONNECTIONS = 2
# what makes a runtime's count repeatable, by the manifest's `language`, set in every
# counted start (a manifest's [instructions] env comes on top). CPython draws a new str
# hash seed for each process: the tunable_cost fixture's count then moved 0.3 % from one
# start to the next, all of it in unicodekeys_lookup_unicode (dict probes that collide
# differently); with one seed it is one layout of every dict, the same each start
RUNTIME_ENV = {"python": {"PYTHONHASHSEED": "0"}}
# System calls that wait or hand over rather than do work: how many a request makes
# depends on when threads meet, not on the code. django's thread hand-over made 18.4 to
# 23.6 futex calls per request in five counts of the same code (every other system call
# it made was the same to the thousandth), Go's scheduler 0.7-1.1 futex and 1.7-1.9
# nanosleep. The judged figure leaves them out; the table by name keeps them.
WAIT_SYSCALLS = ("futex", "sched_yield", "nanosleep", "clock_nanosleep", "restart_syscall")
# the tests whose request sequence the harness can draw itself (bench.load.sequence)
COUNTABLE_TESTS = ("get user", "update user", "plain", "to json", "queries", "updates",
                   "fortunes", "cached", "mixed")

# the figures a count gives, and how they are named in tables and on the command line
INSTRUCTIONS, SYSCALLS = "instructions", "syscalls"


# --counter: the instruction counter (bench.setup.counters); auto: the best found
COUNTERS = ("auto", "perf", "callgrind")


class CountSpecError(ValueError):
    pass


@dataclass(frozen=True)
class CountSpec:
    """A server's manifest `[instructions]` table: whether it can be counted here (and
    why not), the warm-up its runtime needs, and the environment a count adds (templates,
    as [env]'s; the reason in the manifest's notes.instructions), and the start command of
    a counted start where the runtime takes what makes it repeatable on its command line
    only (V8's flags: Node.js refuses them in NODE_OPTIONS)."""
    countable: bool = True
    reason: str = ""                 # why not, when not countable
    warmup: int = DEFAULT_WARMUP
    env: dict = field(default_factory=dict)
    start: tuple[str, ...] | None = None     # None: the manifest's start

    def public(self) -> dict:
        return {"countable": self.countable, "reason": self.reason or None,
                "warmup": self.warmup, "env": dict(self.env),
                "start": list(self.start) if self.start else None}


def parse_spec(table, path: Path) -> CountSpec:
    """`[instructions]` of a manifest (None: the defaults)."""
    if table is None:
        return CountSpec()
    if not isinstance(table, dict):
        raise CountSpecError(f"{path}: [instructions] must be a table")
    unknown = set(table) - {"countable", "reason", "warmup", "env", "start"}
    if unknown:
        raise CountSpecError(f"{path}: [instructions] has unknown key(s) "
                             f"{', '.join(sorted(unknown))}; known: countable, reason, "
                             f"warmup, env, start")
    countable = table.get("countable", True)
    if not isinstance(countable, bool):
        raise CountSpecError(f"{path}: [instructions] countable must be true or false")
    reason = str(table.get("reason", ""))
    if not countable and not reason:
        raise CountSpecError(f"{path}: [instructions] countable = false needs a reason "
                             f"(what fails, measured)")
    warmup = table.get("warmup", DEFAULT_WARMUP)
    if type(warmup) is not int or warmup < 0:
        raise CountSpecError(f"{path}: [instructions] warmup must be a whole number of "
                             f"requests (0 or more), got {warmup!r}")
    env = table.get("env", {})
    if not isinstance(env, dict):
        raise CountSpecError(f"{path}: [instructions] env must be a table of variables")
    start = table.get("start")
    if start is not None and (not isinstance(start, list) or not start
                              or not all(isinstance(a, str) for a in start)):
        raise CountSpecError(f"{path}: [instructions] start must be a non-empty list of "
                             f"strings (a command, as the manifest's start)")
    return CountSpec(countable, reason, warmup, {str(k): str(v) for k, v in env.items()},
                     tuple(start) if start else None)


@dataclass(frozen=True)
class CountPlan:
    """What `--instructions` asks of a run: N requests counted per case, how many counts
    of each case (each a fresh start of its server), the seed of the request sequence."""
    requests: int = DEFAULT_REQUESTS
    runs: int = 1
    seed: int = 1
    token: str = "hardcoded_token"
    idle_s: float = IDLE_WINDOW_S        # the idle window (a test of the mechanism: shorter)


def why_not_counted(test: str, load) -> str | None:
    """Why a case is not counted itself (None: it is). `load`: its
    bench.core.plan.LoadParams. A count sends HTTP/1.1 over one keep-alive connection
    straight to the server: a case measured through a proxy, over another protocol,
    with Connection: close or at a fixed rate is not counted (the same server's work is,
    under its plain case); cases that differ only in connections or generator share one
    count (`count_key`)."""
    if test not in COUNTABLE_TESTS:
        return f"the test {test!r} has no request sequence the harness draws itself"
    differs = [what for what, yes in (
        (f"behind {load.proxy}", load.proxy != "none"),
        (f"over {load.protocol}", load.protocol != "h1"),
        ("with Connection: close", load.connection_mode != "keep-alive"),
        (f"at the rate {load.rate}", load.rate is not None)) if yes]
    if differs:
        return ("a count sends HTTP/1.1 over one keep-alive connection straight to the "
                "server; this case is measured " + ", ".join(differs))
    return None


def count_key(variant_key: str, test: str, n: int | None, mix: str | None) -> str:
    """What one count stands for: a server variant on one test (with its n, its mix).
    Cases that differ only in client connections or load generator send the server the
    same requests, so they share it."""
    return "/".join([variant_key, test.replace(" ", "_")]
                    + ([f"n{n}"] if n is not None else []) + ([mix] if mix else []))


def validate(s) -> None:
    """--instructions' options of a Settings (bench.core.settings.validate calls it)."""
    if s.counter not in COUNTERS:
        raise SelectionError(f"unknown --counter {s.counter!r}; valid: {', '.join(COUNTERS)}")
    for flag, value in (("instructions-requests", s.instructions_requests),
                        ("instructions-runs", s.instructions_runs)):
        if type(value) is not int or value < 1:
            raise SelectionError(f"--{flag} must be a whole number of 1 or more, got {value!r}")
