"""scripts/coverage_by_test.py's attribution of lines to tests, on hand-made coverage data:
a tier is credited with its tests' in-process lines (their contexts) and their started
processes' folders, and never with a line only a test outside it ran."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from coverage import CoverageData

from bench.paths import REPO

spec = importlib.util.spec_from_file_location("coverage_by_test", REPO / "scripts" / "coverage_by_test.py")
by_test = importlib.util.module_from_spec(spec)
spec.loader.exec_module(by_test)

SOURCE = "/repo/bench/x.py"
INSIDE = "tests/e2e/test_a.py::test_inside[user@host]"  # an @ of its own: only the suffix goes
OUTSIDE = "tests/e2e/test_b.py::test_outside"


def write(path: Path, lines: dict[str, set[int]], context: str = "") -> None:
    data = CoverageData(str(path))
    data.set_context(context)
    data.add_lines(lines)
    data.write()


def folder(root: Path, nodeid: str, lines: set[int]) -> None:
    where = root / "by-test" / nodeid.replace("/", "_").replace(":", "_")
    where.mkdir(parents=True)
    (where / "nodeid").write_text(nodeid)
    write(where / "coverage.host.1", {SOURCE: lines})


def test_context_of_names_the_test_function_as_coverage_does():
    assert by_test.context_of(INSIDE) == "tests.e2e.test_a.test_inside"
    assert by_test.context_of("tests/unit/test_c.py::TestK::test_m") == "tests.unit.test_c.TestK.test_m"


def test_a_tier_gets_its_tests_lines_and_no_line_only_another_test_ran(tmp_path):
    # the combined file: line 1 at import (no test), 2 in INSIDE's context, 3 in OUTSIDE's,
    # 10 and 20 with no context because processes started by the tests ran them
    combined = CoverageData(str(tmp_path / "coverage"))
    for context, lines in (("", {1, 10, 20, 30}), (by_test.context_of(INSIDE), {2}),
                           (by_test.context_of(OUTSIDE), {3})):
        combined.set_context(context)
        combined.add_lines({SOURCE: lines})
    combined.write()
    folder(tmp_path, INSIDE + "@netns", {10})      # an xdist group's suffix is not the id
    folder(tmp_path, OUTSIDE, {20, 30})
    folder(tmp_path, "tests/e2e/test_c.py::test_also_inside", {30})

    everything = by_test.covered_lines(tmp_path, None)
    tier = by_test.covered_lines(tmp_path, {INSIDE, "tests/e2e/test_c.py::test_also_inside"})
    assert everything[SOURCE] == {1, 2, 3, 10, 20, 30}
    assert tier[SOURCE] == {1, 2, 10, 30}
