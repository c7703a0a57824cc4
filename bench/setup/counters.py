"""Which counters this machine has for `--instructions`: what `doctor` prints and what a
run picks (standard library only, installs nothing).

Instructions, best first:
  perf       the CPU's own counters (`perf stat -e instructions:u`), at full speed: only
             where the machine exposes hardware counters (a bare-metal box does; many
             virtual machines, this project's CI among them, do not: perf then says
             "<not supported>")
  callgrind  valgrind's instruction counting, 20-50 times slower, anywhere valgrind runs,
             and with each function's share (where the change went)
System calls: strace.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass

from bench.setup import probe

METHODS = ("perf", "callgrind")
PERF_EVENT = "instructions:u"


@dataclass(frozen=True)
class Counter:
    method: str | None            # "perf" | "callgrind" | "strace"; None: none here
    tool: str | None              # what the results record: "valgrind-3.19.0"
    why: str                      # what was found, or why nothing was

    @property
    def present(self) -> bool:
        return self.method is not None


def perf_counts_instructions(find=probe.find) -> tuple[bool, str]:
    """Whether `perf stat -e instructions:u` counts here, and what perf said."""
    perf = find("perf")
    if not perf.present:
        return False, "perf is not installed (Debian's linux-perf)"
    try:
        done = subprocess.run([perf.path, "stat", "-x,", "-e", PERF_EVENT, "true"],
                              capture_output=True, text=True, timeout=probe.PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"perf stat did not run: {exc}"
    lines = [line for line in done.stderr.splitlines() if PERF_EVENT in line]
    value = lines[0].split(",")[0] if lines else ""
    if value.replace(".", "").isdigit():
        return True, f"perf {perf.version or ''}: {PERF_EVENT} counts".replace("  ", " ")
    said = value.strip("<>") or (done.stderr.strip().splitlines() or ["no output"])[-1]
    return False, f"perf stat -e {PERF_EVENT}: {said} (no hardware counters here)"


def instruction_counter(asked: str = "auto", find=probe.find) -> Counter:
    """The instruction counter a run uses: `asked` ("auto": the best found, or one of
    METHODS). Counter(None, ...) says why there is none."""
    perf_ok, perf_said = perf_counts_instructions(find) if asked in ("auto", "perf") \
        else (False, "")
    if perf_ok:
        return Counter("perf", f"perf-{find('perf').version}", perf_said)
    if asked == "perf":
        return Counter(None, None, perf_said)
    valgrind, vgdb = find("valgrind"), find("vgdb")
    if valgrind.present and vgdb.present:
        why = f"valgrind {valgrind.version}: callgrind" + (f" ({perf_said})" if perf_said else "")
        return Counter("callgrind", f"valgrind-{valgrind.version}", why)
    missing = "valgrind is not installed" if not valgrind.present else \
        "valgrind's vgdb is not installed"
    return Counter(None, None, f"{missing} (setup/packages.txt: `make setup` installs it)"
                   + (f"; {perf_said}" if perf_said else ""))


def syscall_counter(find=probe.find) -> Counter:
    strace = find("strace")
    if strace.present:
        return Counter("strace", f"strace-{strace.version}", f"strace {strace.version}")
    return Counter(None, None, "strace is not installed (setup/packages.txt: `make setup` "
                               "installs it)")
