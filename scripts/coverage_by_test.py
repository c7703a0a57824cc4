"""What a test tier covers of bench/, computed from one run that kept each test's data
apart (`COVERAGE=by-test bash scripts/test.sh all`): the share of bench/'s lines the
tests of a marker expression cover, beside the share every test covers, and the files
whose lines only the other tests reach.

    .venv/bin/python scripts/coverage_by_test.py --tier "not full and not server_checks"
    .venv/bin/python scripts/coverage_by_test.py --tier "not full and not server_checks" \\
        --without tests/e2e/test_nightly.py --without tests/e2e/test_suite.py

A test's in-process lines carry its name as coverage's dynamic context; what the Python
processes it started ran (run_bench.py, the agent) is in a folder of its own under
.coverage-data/by-test (tests/conftest.py). This is how `make test` was chosen to cover
what `make test-all` covers, within the issue's 2 points (docs/testing.md).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from coverage import Coverage, CoverageData

REPO = Path(__file__).resolve().parent.parent


def tier_nodeids(expression: str) -> set[str]:
    """The node ids pytest collects for a marker expression (every server's checks)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-m", expression],
                          cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, "BENCH_TEST_SERVERS": "all"})
    ids = {line.strip() for line in done.stdout.splitlines() if "::" in line}
    if not ids:
        raise SystemExit(f"pytest collected nothing for -m {expression!r}:\n{done.stdout[-2000:]}")
    return ids


def context_of(nodeid: str) -> str:
    """coverage's test_function context for a node id: the test's qualified name."""
    path, _, rest = nodeid.partition("::")
    return ".".join([path.removesuffix(".py").replace("/", "."),
                     *re.sub(r"\[.*\]$", "", rest).split("::")])


def folder_lines(data_dir: Path) -> dict[str, dict[str, set[int]]]:
    """{test's node id: {source file: lines}} of the processes each test started."""
    found: dict[str, dict[str, set[int]]] = {}
    for folder in sorted((data_dir / "by-test").iterdir()):
        # under pytest-xdist a test of a group is named with its group's suffix (@netns)
        nodeid = re.sub(r"@[\w-]+$", "", (folder / "nodeid").read_text().strip())
        for path in folder.glob("coverage.*"):
            data = CoverageData(str(path))
            data.read()
            for source in data.measured_files():
                found.setdefault(nodeid, defaultdict(set))[source].update(data.lines(source) or ())
    return found


def covered_lines(data_dir: Path, tier: set[str] | None) -> dict[str, set[int]]:
    """{source file: lines run} by the tests of `tier` (None: every test), from the
    combined data (scripts/test.sh combines every process's file into one) and the
    tests' folders. A line the combined data holds with no test's context was run either
    by a pytest process outside any test (imports, collection) or by a started process:
    it counts for the tier only when no folder of a test outside the tier holds it, or a
    folder of a test inside it does, so a tier is never credited with another test's line."""
    combined = CoverageData(str(data_dir / "coverage"))
    combined.read()
    folders = folder_lines(data_dir)
    in_tier = None if tier is None else {context_of(n) for n in tier}
    elsewhere: dict[str, set[int]] = defaultdict(set)
    lines: dict[str, set[int]] = defaultdict(set)
    for nodeid, files in folders.items():
        target = lines if tier is None or nodeid in tier else elsewhere
        for source, run in files.items():
            target[source] |= run
    for source in combined.measured_files():
        for line, contexts in combined.contexts_by_lineno(source).items():
            if in_tier is None or any(c in in_tier for c in contexts):
                lines[source].add(line)
            elif "" in contexts and line not in elsewhere[source]:
                lines[source].add(line)
    return lines


def statements(rcfile: Path) -> dict[str, set[int]]:
    """{source file: executable lines} of every module under bench/, as coverage counts them."""
    cov = Coverage(config_file=str(rcfile), data_file=None)
    found = {}
    for source in sorted((REPO / "bench").rglob("*.py")):
        _, executable, _, _, _ = cov.analysis2(str(source))
        if executable:
            found[str(source)] = set(executable)
    return found


def share(lines: dict[str, set[int]], executable: dict[str, set[int]]) -> tuple[int, int]:
    total = sum(len(s) for s in executable.values())
    return sum(len(lines.get(f, set()) & s) for f, s in executable.items()), total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tier", required=True, help="pytest marker expression of the tier")
    parser.add_argument("--without", action="append", default=[],
                        help="a node id or its prefix (a file) left out of the tier; repeatable")
    parser.add_argument("--data", type=Path, default=REPO / ".coverage-data")
    parser.add_argument("--top", type=int, default=15, help="files listed that lose most")
    args = parser.parse_args()
    if not (args.data / "by-test").is_dir():
        raise SystemExit(f"no per-test data in {args.data}: run COVERAGE=by-test bash scripts/test.sh all")
    tier = {n for n in tier_nodeids(args.tier) if not n.startswith(tuple(args.without))}
    executable = statements(args.data / "by-test.rc")
    everything = covered_lines(args.data, None)
    subset = covered_lines(args.data, tier)
    got, total = share(subset, executable)
    all_got, _ = share(everything, executable)
    print(f"tests of -m {args.tier!r}{' without ' + ', '.join(args.without) if args.without else ''}: "
          f"{len(tier)} tests, {got} of {total} lines, {100 * got / total:.1f} %")
    print(f"every test: {all_got} of {total} lines, {100 * all_got / total:.1f} % "
          f"({100 * (all_got - got) / total:.1f} points more)")
    lost = sorted(((len((everything.get(f, set()) - subset.get(f, set())) & s), f)
                   for f, s in executable.items()), reverse=True)
    for count, source in lost[:args.top]:
        if count:
            print(f"  {count:5d} lines only outside: {Path(source).relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
