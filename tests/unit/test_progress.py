"""The run's display: the ETA and mode choice as pure functions, plain lines without
control characters, quiet output, and the live rich display on a forced terminal.
Time comes from a fake clock, so nothing here depends on how fast the machine is."""
import io
import re

import pytest
from rich.console import Console

from bench.report import progress
from bench.report.progress import Display, eta_seconds, format_duration, resolve_mode

STAMP = re.compile(r"^\d\d:\d\d:\d\d ", re.MULTILINE)
# anything a terminal would interpret: ESC, CR, every other C0 but \n, DEL, C1
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")
CASE = "fastapi/postgres/raw/get_user@c64"


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


class TtyBuffer(io.StringIO):
    def isatty(self):
        return True


# ---------------------------------------------------------------------- pure functions
def test_eta_uses_the_plan_before_any_sample_finished():
    assert eta_seconds(total=40, done=0, planned_per_sample=30, finished_seconds=[]) == 1200


def test_eta_keeps_the_plan_until_enough_samples_finished():
    # two fast samples are not yet evidence: still 38 x the planned 30 s
    assert eta_seconds(total=40, done=2, planned_per_sample=30,
                       finished_seconds=[5, 5]) == 38 * 30


def test_eta_uses_the_measured_mean_once_enough_samples_finished():
    assert progress.MEASURED_AFTER == 3
    assert eta_seconds(total=40, done=3, planned_per_sample=30,
                       finished_seconds=[8, 10, 12]) == 37 * 10


def test_eta_counts_the_running_sample_at_most_as_one_share():
    assert eta_seconds(total=10, done=2, planned_per_sample=30, finished_seconds=[],
                       current_elapsed=12) == 8 * 30 - 12
    # a sample running longer than planned does not eat into the ones not yet started
    assert eta_seconds(total=10, done=2, planned_per_sample=30, finished_seconds=[],
                       current_elapsed=500) == 7 * 30


def test_eta_is_zero_when_everything_is_done():
    assert eta_seconds(total=5, done=5, planned_per_sample=30, finished_seconds=[9] * 5) == 0
    assert eta_seconds(total=5, done=7, planned_per_sample=30, finished_seconds=[]) == 0


def test_format_duration():
    assert format_duration(750) == "0:12:30"
    assert format_duration(0) == "0:00:00"
    assert format_duration(-3) == "0:00:00"
    assert format_duration(36_061.4) == "10:01:01"


def test_sanitize_drops_whole_escape_sequences_and_controls():
    text = "a\x1b[31mred\x1b[0m\rline\x07\x00\x9b2J\tend\n" + "\x1b]0;title\x07x"
    assert progress.sanitize(text) == "ared\nline2J end\nx"


def test_auto_picks_plain_for_a_buffer_and_live_for_a_terminal():
    assert resolve_mode("auto", io.StringIO(), {"TERM": "xterm"}) == "plain"
    assert resolve_mode("auto", TtyBuffer(), {"TERM": "xterm"}) == "live"
    assert resolve_mode("auto", TtyBuffer(), {"TERM": "dumb"}) == "plain"
    assert resolve_mode("auto", object(), {}) == "plain"
    assert resolve_mode("quiet", TtyBuffer(), {}) == "quiet"
    with pytest.raises(ValueError, match="display mode"):
        resolve_mode("fancy", io.StringIO(), {})


def test_a_display_on_a_buffer_defaults_to_plain():
    assert Display(total_samples=1, planned_seconds_per_sample=1, stream=io.StringIO()).mode \
        == "plain"


# ---------------------------------------------------------------------- plain
def run_suite(display: Display, clock: FakeClock) -> None:
    """Four samples of 10 s each with a plan of 30 s; the third fails."""
    with display as d:
        d.run_started("20260102T000000Z-x", cases=2, samples=2, run_dir="results/x",
                      order_seed=7)
        d.step("databases (local): starting postgres")
        for n in range(1, 5):
            d.sample_started(n, CASE, (n + 1) // 2)
            for name in ("restore", "start", "verify", "warm-up", "measure", "stop"):
                d.phase(name)
                clock.advance(10 / 6)
            if n == 3:
                d.error("fastapi did not become ready\x1b[31m in 30 s\r")
                d.sample_finished(n, CASE, "failed", None, None,
                                  "FAILED: fastapi did not become ready")
            else:
                d.sample_finished(n, CASE, "ok", 6512.4, 12.34,
                                  "6,512 req/s, p50 4.10 ms\n       note: client-bound")
            d.note("verification: passed")
        d.final("| table |\n|---|\nresults: results/x/results.json\n")


def test_plain_prints_one_timestamped_line_per_event_and_no_control_characters():
    out, clock = io.StringIO(), FakeClock()
    run_suite(Display(total_samples=4, planned_seconds_per_sample=30, mode="plain",
                      stream=out, clock=clock), clock)
    text = out.getvalue()
    assert not CONTROL.search(text)
    lines = text.splitlines()
    body, tail = lines[:-3], lines[-3:]
    assert all(STAMP.match(line) for line in body)
    assert tail == ["| table |", "|---|", "results: results/x/results.json"]
    body = [line[9:] for line in body]
    assert body[0] == ("run 20260102T000000Z-x: 2 cases x 2 samples (4 in all), order seed 7; "
                       "results in results/x; planned about 0:02:00")
    assert body[1] == "databases (local): starting postgres"
    assert body[2] == f"[1/4] {CASE} round 1 sample started"
    assert body[3] == f"[1/4] {CASE} round 1: restore"
    assert f"[3/4] {CASE} round 2: measure" in body
    # plan (30 s) x 3 left after the first; measured mean (10 s) x 1 left after the third
    assert "[1/4] done ok 6,512 req/s p99 12.3 ms, eta 0:01:30" in body
    assert "[2/4] done ok 6,512 req/s p99 12.3 ms, eta 0:01:00" in body
    assert "[3/4] done failed, eta 0:00:10" in body
    assert "[4/4] done ok 6,512 req/s p99 12.3 ms, eta 0:00:00" in body
    assert "[1/4]   note: client-bound" in body
    assert "[3/4]   FAILED: fastapi did not become ready" in body
    assert "ERROR fastapi did not become ready in 30 s" in body
    assert "verification: passed" in body


def test_plain_output_stays_encodable_on_an_ascii_stream():
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="ascii")
    d = Display(total_samples=1, planned_seconds_per_sample=1, mode="plain", stream=out)
    d.note("server said \u00b5s \u2014 fine")
    d.final("median \u00b1 spread")
    assert raw.getvalue().decode("ascii").endswith(
        "server said \\xb5s \\u2014 fine\nmedian \\xb1 spread\n")


# ---------------------------------------------------------------------- quiet
def test_quiet_prints_only_errors_to_stderr_and_the_final_text():
    out, err, clock = io.StringIO(), io.StringIO(), FakeClock()
    run_suite(Display(total_samples=4, planned_seconds_per_sample=30, mode="quiet",
                      stream=out, err_stream=err, clock=clock), clock)
    assert out.getvalue() == "| table |\n|---|\nresults: results/x/results.json\n"
    assert err.getvalue() == "error: fastapi did not become ready in 30 s\n"


# ---------------------------------------------------------------------- live
SHOW_CURSOR, HIDE_CURSOR = "\x1b[?25h", "\x1b[?25l"


@pytest.fixture
def xterm(monkeypatch):
    """rich reads the terminal's kind from the environment: make it a capable one, so that
    these tests do not depend on where they run (TERM=dumb in CI turns animation off)."""
    monkeypatch.setenv("TERM", "xterm-256color")
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS",
                 "LINES"):
        monkeypatch.delenv(name, raising=False)


def terminal(buf=None, **kwargs):
    return Console(file=buf or io.StringIO(), force_terminal=True, width=100,
                   color_system="standard", **kwargs)


def test_live_renders_and_ends_with_the_final_text_and_a_visible_cursor(xterm):
    console, clock = terminal(), FakeClock()
    run_suite(Display(total_samples=4, planned_seconds_per_sample=30, mode="live",
                      console=console, clock=clock), clock)
    text = console.file.getvalue()
    assert HIDE_CURSOR in text and text.rindex(SHOW_CURSOR) > text.rindex(HIDE_CURSOR)
    assert text.endswith("| table |\n|---|\nresults: results/x/results.json\n")
    # the final tables come after the live region is gone, untouched by rich
    assert "\x1b" not in text[text.rindex("| table |"):]
    assert "6,512 req/s" in text and CASE in text and "client-bound" in text
    assert "fastapi did not become ready" in text


def test_live_restores_the_cursor_when_interrupted(xterm):
    console = terminal()
    with pytest.raises(KeyboardInterrupt):
        with Display(total_samples=3, planned_seconds_per_sample=5, mode="live",
                     console=console) as d:
            d.sample_started(1, CASE, 1)
            d.phase("measure")
            raise KeyboardInterrupt
    text = console.file.getvalue()
    assert text.rindex(SHOW_CURSOR) > text.rindex(HIDE_CURSOR)


def test_live_activity_line_shows_the_case_phase_and_its_duration(xterm):
    clock = FakeClock()
    d = Display(total_samples=3, planned_seconds_per_sample=5, mode="live",
                console=terminal(), clock=clock)
    d.sample_started(2, CASE, 1)
    d.phase("warm-up")
    clock.advance(4)
    assert d._activity_text().plain == f"[2/3] {CASE} round 1  warm-up for 0:00:04"
    assert d.eta() == 2 * 5 - 4


def test_live_respects_no_color(xterm):
    out = TtyBuffer()
    clock = FakeClock()
    run_suite(Display(total_samples=4, planned_seconds_per_sample=30, mode="auto",
                      stream=out, environ={"TERM": "xterm", "NO_COLOR": "1"}, clock=clock),
              clock)
    text = out.getvalue()
    assert HIDE_CURSOR in text            # it did draw live
    params = [p for sgr in re.findall(r"\x1b\[([0-9;]*)m", text) for p in sgr.split(";") if p]
    colours = [p for p in params if 30 <= int(p) <= 49 or 90 <= int(p) <= 107]
    assert colours == []
