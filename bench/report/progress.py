"""What a run shows while it runs: a live rich display on a terminal, one plain timestamped
line per event everywhere else (CI, a pipe, a file), or only errors and the final tables.

The runner reports events (run started, a step, a sample started, its phase, a sample
finished, a note, an error, the final text); this module decides how they look. The ETA
and the mode choice are pure functions so that they are tested without a clock or a TTY.
"""
from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, Task,
                           TextColumn, TimeElapsedColumn)
from rich.text import Text

MODES = ("auto", "live", "plain", "quiet")
# The phases the runner reports, in their usual order (informational: any name is shown).
PHASES = ("restore", "settle", "start", "verify", "proxy", "warm-up", "measure", "check", "stop")
# Before this many samples have finished, their mean says more about the first case's
# start-up (builds warmed, caches cold) than about the suite; the plan is the better guess.
MEASURED_AFTER = 3

# A whole escape sequence (CSI, OSC, or a two-character ESC sequence) goes, not just the
# ESC byte, so that "\x1b[31mred" becomes "red" and not "[31mred".
_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?")
# Every C0 control but \n, DEL and C1 (some terminals treat \x9b as CSI).
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


# ---------------------------------------------------------------------- pure helpers
def eta_seconds(*, total: int, done: int, planned_per_sample: float,
                finished_seconds: Sequence[float], current_elapsed: float = 0.0,
                measured_after: int = MEASURED_AFTER) -> float:
    """Seconds left in the suite.

    The per-sample time is the plan's (warm-up + duration + overhead, from the runner)
    until `measured_after` samples have finished, then the mean of the finished samples'
    wall time: the plan cannot know how long restores, starts and verification take on
    this machine, the measured mean does. The sample in progress counts as done for the
    time it has already run, at most its whole share, so the ETA falls between samples
    and never goes below the samples not yet started."""
    left = max(total - done, 0)
    if left == 0:
        return 0.0
    if len(finished_seconds) >= measured_after and finished_seconds:
        per_sample = sum(finished_seconds) / len(finished_seconds)
    else:
        per_sample = planned_per_sample
    per_sample = max(per_sample, 0.0)
    return max(per_sample * left - min(max(current_elapsed, 0.0), per_sample), 0.0)


def format_duration(seconds: float) -> str:
    """H:MM:SS, e.g. 0:12:30; hours grow past 9 as needed."""
    whole = max(int(round(seconds)), 0)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}"


def format_ms(value: float) -> str:
    """Latency with about three significant digits: 0.45, 12.3, 250."""
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def sanitize(text: str) -> str:
    """Text without escape sequences or control characters except \\n: a reason quoted
    from a server's answer or log must not move the cursor or recolour a CI log."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    return _CONTROL.sub("", _ESCAPE.sub("", text))


def resolve_mode(mode: str, stream, environ: Mapping[str, str] | None = None) -> str:
    """"auto" becomes "live" on a terminal that can draw (TERM is not "dumb"), else
    "plain"; the other modes stay as asked."""
    if mode not in MODES:
        raise ValueError(f"display mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode != "auto":
        return mode
    environ = os.environ if environ is None else environ
    try:
        tty = bool(stream.isatty())
    except (AttributeError, ValueError, OSError):   # no isatty, or a closed stream
        tty = False
    return "live" if tty and environ.get("TERM", "") != "dumb" else "plain"


def _encodable(text: str, stream) -> str:
    """Text the stream can encode: a CI runner with an ASCII locale gets \\u escapes
    instead of a UnicodeEncodeError in the middle of a run."""
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return text
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        try:
            return text.encode(encoding, "backslashreplace").decode(encoding)
        except LookupError:
            return text.encode("ascii", "backslashreplace").decode("ascii")


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in sanitize(text).split("\n") if line.strip()]


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in _lines(text))


# ---------------------------------------------------------------------- live widgets
class _EtaColumn(ProgressColumn):
    """The suite's ETA from eta_seconds (rich's own TimeRemainingColumn would extrapolate
    from the bar's speed alone, and show nothing before the first sample finished)."""

    def __init__(self, display: "Display"):
        super().__init__()
        self._display = display

    def render(self, task: Task) -> Text:
        return Text(f"eta {format_duration(self._display.eta())}", style="progress.remaining")


class _SuiteProgress(Progress):
    """The bar with the current activity line above it."""

    def __init__(self, display: "Display", *columns, **kwargs):
        self._display = display   # before Progress.__init__, which renders once
        super().__init__(*columns, **kwargs)

    def get_renderables(self):
        yield self._display._activity_text()
        yield self.make_tasks_table(self.tasks)


# ---------------------------------------------------------------------- the display
class Display:
    """The runner's output. Use as a context manager: leaving it (normally, on an
    exception or on Ctrl-C) stops the live display and shows the cursor again.

    Optional, mainly for tests: `console` (the rich Console of live mode), `err_stream`
    (where quiet mode's errors go, default sys.stderr), `environ` (for the mode choice
    and NO_COLOR), `clock` (monotonic seconds, for durations and the ETA) and `wall`
    (epoch seconds, for the plain timestamps)."""

    def __init__(self, *, total_samples: int, planned_seconds_per_sample: float,
                 mode: str = "auto", stream: TextIO | None = None,
                 console: Console | None = None, err_stream: TextIO | None = None,
                 environ: Mapping[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time):
        self.stream = sys.stdout if stream is None else stream
        self.err_stream = err_stream
        self.mode = resolve_mode(mode, self.stream, environ)
        self.total = total_samples
        self.planned = planned_seconds_per_sample
        self._clock, self._wall = clock, wall
        self._done = 0
        self._finished_seconds: list[float] = []
        self._sample: tuple[int, str, int] | None = None   # (n, case id, round)
        self._sample_started: float | None = None
        self._activity = "starting"
        self._activity_started = clock()
        self._progress: _SuiteProgress | None = None
        self._task = None
        self._console: Console | None = None
        if self.mode == "live":
            env = os.environ if environ is None else environ
            self._console = console or Console(file=self.stream,
                                               no_color=env.get("NO_COLOR", "") != "",
                                               highlight=False)

    # -------------------------------------------------------------- lifetime
    def __enter__(self) -> "Display":
        if self.mode == "live" and self._progress is None:
            on_stdout = self._console.file is sys.stdout
            self._progress = _SuiteProgress(
                self, TextColumn("suite"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), _EtaColumn(self),
                console=self._console, transient=True, refresh_per_second=4,
                get_time=self._clock,
                # a stray print() or warning goes above the bar instead of through it;
                # only when the display owns the real stdout (not a test's buffer)
                redirect_stdout=on_stdout, redirect_stderr=on_stdout)
            self._task = self._progress.add_task("suite", total=max(self.total, 1),
                                                 completed=self._done)
            self._progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop_live()

    def _stop_live(self) -> None:
        progress, self._progress = self._progress, None
        if progress is None:
            return
        try:
            progress.stop()
        finally:
            # Live.stop shows the cursor too; this covers a stop that failed before it
            self._console.show_cursor(True)

    # -------------------------------------------------------------- events
    def run_started(self, run_id: str, cases: int, samples: int, run_dir: str,
                    order_seed: int) -> None:
        """`samples` is the samples per case (the runner's repeat)."""
        self._set_activity(f"run {run_id}")
        planned = format_duration(self.planned * self.total)
        self._emit(f"run {run_id}: {cases} cases x {samples} samples ({self.total} in all), "
                   f"order seed {order_seed}; results in {run_dir}; planned about {planned}")

    def step(self, text: str) -> None:
        self._set_activity(text)
        self._emit(text)

    def sample_started(self, n: int, case_id: str, round_: int) -> None:
        """`round_` as it is shown: 1 for the first round."""
        self._sample = (n, case_id, round_)
        self._done = max(self._done, n - 1)   # the samples before it, whatever they did
        self._sample_started = self._clock()
        self._set_activity("starting")
        if self.mode == "plain":
            self._plain(f"{self._sample_tag()} sample started")

    def phase(self, name: str) -> None:
        self._set_activity(name)
        if self.mode == "plain":
            self._plain(f"{self._sample_tag()}: {name}")

    def sample_finished(self, n: int, case_id: str, status: str, rps: float | None,
                        p99_ms: float | None, detail: str) -> None:
        if self._sample_started is not None:
            self._finished_seconds.append(max(self._clock() - self._sample_started, 0.0))
        self._done = max(self._done, n)
        self._sample, self._sample_started = None, None
        self._set_activity("between samples")
        figures = ""
        if rps is not None:
            figures += f" {rps:,.0f} req/s"
        if p99_ms is not None:
            figures += f" p99 {format_ms(p99_ms)} ms"
        if self.mode == "plain":
            tag = f"[{n}/{self.total}]"
            self._plain(f"{tag} done {status}{figures}, eta {format_duration(self.eta())}")
            for line in _lines(detail):
                self._plain(f"{tag}   {line.strip()}")
        elif self.mode == "live":
            self._live_sample_line(n, case_id, status, rps, p99_ms, detail)

    def note(self, text: str) -> None:
        self._emit(text, style="dim")

    def error(self, text: str) -> None:
        if self.mode == "quiet":
            err = sys.stderr if self.err_stream is None else self.err_stream
            self._write(err, "\n".join(f"error: {line}" for line in _lines(text)))
        elif self.mode == "plain":
            for line in _lines(text):
                self._plain(f"ERROR {line}")
        else:
            self._print(text, style="bold red")

    def final(self, text: str) -> None:
        """The tables and paths, byte for byte (no wrapping, no timestamps), after the
        live display is gone; events after this one print as plain console lines."""
        self._stop_live()
        target = self._console.file if self.mode == "live" else self.stream
        self._write(target, sanitize(text).rstrip("\n"))

    # -------------------------------------------------------------- state
    def eta(self) -> float:
        # read once: the live display's refresh thread calls this while events change it
        started = self._sample_started
        current = 0.0 if started is None else self._clock() - started
        return eta_seconds(total=self.total, done=self._done,
                           planned_per_sample=self.planned,
                           finished_seconds=self._finished_seconds, current_elapsed=current)

    def _set_activity(self, text: str) -> None:
        self._activity, self._activity_started = text, self._clock()
        if self._progress is not None:
            self._progress.update(self._task, completed=self._done)
            # now, not at the next tick: a line printed meanwhile redraws the last render
            self._progress.refresh()

    def _sample_tag(self) -> str:
        sample = self._sample   # read once, as in eta()
        if sample is None:
            return f"[-/{self.total}]"
        n, case_id, round_ = sample
        return f"[{n}/{self.total}] {case_id} round {round_}"

    def _activity_text(self) -> Text:
        activity, started, tag = self._activity, self._activity_started, self._sample_tag()
        since = format_duration(self._clock() - started)
        if tag.startswith("[-/"):
            text = Text.assemble((_one_line(activity), "bold"), f"  {since}")
        else:
            text = Text.assemble(_one_line(tag) + "  ", (_one_line(activity), "bold cyan"),
                                 f" for {since}")
        # one line whatever the width, so the live region keeps its height
        text.no_wrap, text.overflow = True, "ellipsis"
        return text

    # -------------------------------------------------------------- output
    def _emit(self, text: str, style: str = "") -> None:
        """A run-level line: timestamped in plain mode, above the bar in live mode."""
        if self.mode == "plain":
            for line in _lines(text):
                self._plain(line)
        elif self.mode == "live":
            self._print(text, style=style)

    def _print(self, text: str, style: str = "") -> None:
        # soft wrap: the terminal folds a long line, so a path in it stays one string
        self._console.print(Text("\n".join(_lines(text)), style=style), soft_wrap=True)

    def _plain(self, line: str) -> None:
        stamp = time.strftime("%H:%M:%S", time.localtime(self._wall()))
        self._write(self.stream, f"{stamp} {sanitize(line)}")

    @staticmethod
    def _write(stream, text: str) -> None:
        # flushed per line: a CI log shows the run as it happens, not when a buffer fills
        stream.write(_encodable(text, stream) + "\n")
        stream.flush()

    def _live_sample_line(self, n: int, case_id: str, status: str, rps: float | None,
                          p99_ms: float | None, detail: str) -> None:
        width = len(str(self.total))
        line = Text(f"[{n:>{width}}/{self.total}] ")
        line.append(f"{status:<6}", style="green" if status == "ok" else "bold red")
        line.append(f" {'-' if rps is None else f'{rps:,.0f}':>9} req/s")
        line.append(f"  p99 {'-' if p99_ms is None else format_ms(p99_ms):>7} ms  ")
        line.append(sanitize(case_id), style="bold")
        self._console.print(line)
        # an ok sample's first detail line repeats the figures; its notes do not, and a
        # failed sample's detail is its reason
        extra = _lines(detail)[1:] if status == "ok" else _lines(detail)
        for text in extra:
            self._print("    " + text.strip(), style="dim")
