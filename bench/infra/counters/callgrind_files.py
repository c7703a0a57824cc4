"""A callgrind output file read: its process, its total and each function's own (self)
cost, for the one event a count records (Ir, instructions executed).

callgrind_annotate prints the same for a reader, in a layout meant for people that
changes between valgrind releases; the file format is documented and stable
(valgrind's docs, "Callgrind Format Specification"), so it is read here directly:

- `fn=`, `fl=`, `ob=`, ... name a function, file or object, compressed as "(id) name"
  the first time and "(id)" afterwards;
- a cost line ("<position(s)> <event costs>") adds to the current function's self cost,
  except the line right after `calls=`, which is the inclusive cost of that call;
- `summary:` is what the process executed since the counters were zeroed: the figure.
  `totals:` is the sum of the cost lines, which callgrind makes 4 larger, and larger
  still in the first dump after instrumentation was switched on (the calls then in
  progress: 1.36 M of 521 M seen for sanic): the per-function costs add up to it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

EVENT = "Ir"


class CallgrindFileError(ValueError):
    pass


@dataclass
class Profile:
    """One dump of one process."""
    path: Path
    pid: int | None
    command: str
    total: int                                   # Ir since zeroed (its `summary:` line)
    functions: dict[str, int] = field(default_factory=dict)   # name -> self Ir

    @property
    def self_total(self) -> int:
        return sum(self.functions.values())


def _name(value: str, table: dict[str, str]) -> str:
    """'(12) name' defines id 12; '(12)' refers to it; a plain name is itself."""
    value = value.strip()
    if value.startswith("("):
        ident, _, rest = value.partition(")")
        ident = ident[1:]
        if rest.strip():
            table[ident] = rest.strip()
        return table.get(ident, f"({ident})")
    return value


def _merged(name: str) -> str:
    """A function's name without callgrind's recursion mark: `f'2` is f entered again
    while f is on the stack (or, with a runtime that switches stacks, such as Go's
    goroutines, wherever callgrind's stack tracking lost count), the same function."""
    base, mark, depth = name.rpartition("'")
    return base if mark and depth.isdigit() else name


def read(path: Path) -> Profile:
    """The file at `path`; CallgrindFileError when it is not a callgrind file with Ir."""
    pid, command, total = None, "", None
    positions, events, event_index = 1, [EVENT], 0
    names: dict[str, str] = {}
    functions: dict[str, int] = {}
    current: str | None = None
    after_calls = False
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError as exc:
        raise CallgrindFileError(f"{path}: {exc.strerror or exc}") from exc
    if not lines or not lines[0].startswith("# callgrind format") and \
            not any(line.startswith("events:") for line in lines[:40]):
        raise CallgrindFileError(f"{path}: not a callgrind output file")
    for line in lines:
        if not line or line[0] == "#":
            continue
        head = line[0]
        if head.isdigit() or head in "+-*":
            if after_calls:               # the inclusive cost of the call just named
                after_calls = False
                continue
            parts = line.split()
            costs = parts[positions:]
            if current is not None and len(costs) > event_index:
                functions[current] = functions.get(current, 0) + int(costs[event_index])
            continue
        key, sep, value = line.partition("=")
        if sep and key in ("fn", "fl", "fi", "fe", "ob", "cob", "cfi", "cfl", "cfn"):
            name = _name(value, names if key in ("fn", "cfn") else {})
            if key in ("fl", "fi", "fe", "ob", "cob", "cfi", "cfl"):
                continue
            if key == "fn":
                current = _merged(name)
            continue
        if sep and key == "calls":
            after_calls = True
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        value = value.strip()
        if key == "pid":
            pid = int(value)
        elif key == "cmd":
            command = value
        elif key == "positions":
            positions = len(value.split())
        elif key == "events":
            events = value.split()
            if EVENT not in events:
                raise CallgrindFileError(f"{path}: records {value}, not {EVENT}")
            event_index = events.index(EVENT)
        elif key in ("totals", "summary"):
            figures = value.split()
            if len(figures) > event_index and (key == "summary" or total is None):
                total = int(figures[event_index])
    if total is None:
        total = sum(functions.values())
    return Profile(Path(path), pid, command, total, functions)
