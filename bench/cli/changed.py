"""`python -m bench.cli.changed`: which servers' checks a change calls for (the Makefile's
test tiers ask it; bench/core/selection.py holds the rules).

Prints one line, `selected servers: ...` with the reason for each, and writes the ids for
the tests (BENCH_TEST_SERVERS: `all`, or a comma list, possibly empty) to --write.
The change is everything between --base and the working tree (commits, uncommitted
edits and untracked files alike). The default base is the merge base with the default
branch, else HEAD~1; with neither (a first commit), every server is selected.
Exit status 2 on a base git does not know.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.core import manifest
from bench.core.selection import RULES, Selection, select
from bench.infra.checkout import _git, shared_code

DEFAULT_BRANCHES = ("origin/HEAD", "origin/main", "origin/master", "main", "master")


def git(*args: str) -> str | None:
    """What git prints in this checkout, None when it fails."""
    return _git(*args, check=False)


def default_base() -> tuple[str | None, str]:
    """(base commit or None, how it was chosen)."""
    head = git("rev-parse", "HEAD")
    for branch in DEFAULT_BRANCHES:
        if git("rev-parse", "--verify", "--quiet", branch + "^{commit}") is None:
            continue
        merge_base = git("merge-base", branch, "HEAD")
        if merge_base and merge_base != head:
            return merge_base, f"the merge base with {branch}"
        break
    parent = git("rev-parse", "--verify", "--quiet", "HEAD~1^{commit}")
    return (parent, "HEAD~1") if parent else (None, "no earlier commit")


def changed_paths(base: str) -> list[str]:
    tracked = git("diff", "--name-only", "--no-renames", base)
    untracked = git("ls-files", "--others", "--exclude-standard")
    if tracked is None:
        raise ValueError(f"git cannot diff against {base!r}: is it a commit of this repository?")
    return [p for p in (tracked + "\n" + (untracked or "")).splitlines() if p]


def selection_for(base: str | None, rule: str) -> tuple[Selection, str]:
    if base is None:
        found, how = default_base()
    else:
        found, how = git("rev-parse", "--verify", "--quiet", base + "^{commit}"), base
        if found is None:
            raise ValueError(f"unknown base {base!r}: git knows no such commit")
    if found is None:
        return Selection(everything="no base to compare with"), how
    shared = {sid: {p.name for p in shared_code(spec)}
              for sid, spec in manifest.discover().items()}
    return select(changed_paths(found), shared, rule), f"{how} ({found[:12]})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cli.changed", description=__doc__)
    parser.add_argument("--base", default=None, help="a commit, branch or tag (default: the "
                        "merge base with the default branch, else HEAD~1)")
    parser.add_argument("--rule", choices=RULES, default="full",
                        help="full: a harness change selects every server (make "
                        "test-changed); servers: only servers/ counts (make test)")
    parser.add_argument("--write", type=Path, default=None,
                        help="write `all` or the comma-separated ids here")
    args = parser.parse_args(argv)
    try:
        selection, how = selection_for(args.base or None, args.rule)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{selection.line()}  [changes since {how}]", flush=True)
    if args.write:
        ids = "all" if selection.everything else ",".join(sorted(selection.servers))
        args.write.write_text(ids + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
