"""The decisions scripts/nightly.sh takes, here so that they are tested: whether this
machine's stored calibration still fits tonight's settings, which stored runs are
tonight's and the previous night's, and whether tonight's run shows that the benchmark
itself failed or that a case broke.

    python -m bench.cli.nightly machine
    python -m bench.cli.nightly calibration RESULTS_DIR MACHINE [run options]
    python -m bench.cli.nightly runs RESULTS_DIR MACHINE BEFORE_FILE
    python -m bench.cli.nightly health TONIGHT [PREVIOUS]

Each prints what the summary says and exits with the status nightly.sh acts on (below).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from bench.analysis.comparability import SHAPING_SETTINGS   # the one comparability rule
from bench.core.manifest import ManifestError
from bench.core.settings import SelectionError, validate
from bench.storage import calibration, results

# nightly.sh's exit statuses (its header and the README's table say the same)
FINE, REGRESSED, BAD_INPUT, BROKEN, BENCH_FAILED = 0, 1, 2, 3, 4
STALE = 10                     # `calibration`: calibrate before tonight's run (not 1,
                               # which a Python error exits with)


def machine_id() -> str:
    """This machine's id, as a run stores it (BENCH_MACHINE_ID wins)."""
    from bench.infra import environment
    return environment.fingerprint(environment.machine())


def settings_of(run_options: list[str]) -> dict:
    """The settings block `run_bench.py --preset nightly [run options]` records, as
    stored (through JSON: lists, not tuples)."""
    from bench.cli import arguments, parser
    from bench.core import manifest
    from bench.infra.proxy import available_proxies
    args = parser().parse_args(["run", "--preset", "nightly", *run_options])
    settings = arguments.settings_from(args)
    # checked as the run checks them: bad options are bad input, not a stale calibration
    validate(settings, list(manifest.discover(settings.servers_dirs)), list(available_proxies()))
    return json.loads(json.dumps(settings.public(), default=str))


def calibration_misfit(stored: dict | None, machine: str, settings: dict) -> str | None:
    """Why the stored calibration does not fit tonight (None: it fits): missing, made for
    another machine, or with other settings that shape the figures."""
    if stored is None:
        return f"machine {machine} has no calibration yet"
    if stored.get("machine_id") != machine:
        return f"it was made for machine {stored.get('machine_id')}, tonight's is {machine}"
    key = stored.get("key") or {}
    made_with = key.get("settings") or stored.get("settings") or {}
    names = list(key["settings"]) if key.get("settings") else SHAPING_SETTINGS
    other = [f"{name} {made_with.get(name)!r} (tonight {settings.get(name)!r})"
             for name in names if made_with.get(name) != settings.get(name)]
    if other:
        return f"it was made with other settings: {', '.join(other)}"
    if settings.get("instructions") and not stored.get("instructions"):
        return "it was made without --instructions: it has no thresholds for the counts"
    return None


def describe(stored: dict) -> str:
    return (f"{stored['path']} (made {stored.get('created_at', '?')} from the runs "
            f"{', '.join(stored.get('runs') or ['?'])})")


def tonight_and_previous(folders: list[Path], before: set[str],
                         calibration_runs: set[str]) -> tuple[Path | None, Path | None]:
    """Tonight's run: the newest one stored since the night began (`before`: the folders
    there were then) that no calibration made. The previous night's: the newest older run
    that no calibration made (a calibration's runs are an A/A pair of tonight, not a
    night of their own)."""
    nights = [f for f in folders
              if f.name not in calibration_runs and not f.name.startswith("verify-")]
    new = [f for f in nights if str(f) not in before]
    tonight = new[-1] if new else None
    older = [f for f in nights if str(f) in before]
    return tonight, (older[-1] if older else None)


def health(tonight: dict, previous: dict | None) -> tuple[int, list[str]]:
    """BENCH_FAILED when tonight's run is not complete or has a case not ok, BROKEN when
    such a case was ok (or missing tonight and ok) the previous night; with the reasons."""
    if tonight.get("status") != "complete":
        return BENCH_FAILED, [f"run {tonight.get('run_id')} is {tonight.get('status')}, "
                              f"not complete"]
    was_ok = {c["id"] for c in (previous or {}).get("cases", []) if c["status"] == results.OK}
    now = {c["id"]: c for c in tonight.get("cases", [])}
    said, broken = [], False
    for case_id, case in now.items():
        if case["status"] != results.OK:
            broke = case_id in was_ok
            broken |= broke
            said.append(f"{case_id}: {case['status']}{' (ok the previous night)' if broke else ''}"
                        f": {case.get('reason') or 'no reason recorded'}")
    for case_id in sorted(was_ok - set(now)):
        broken = True
        said.append(f"{case_id}: missing tonight (ok the previous night)")
    if broken:
        return BROKEN, said
    return (BENCH_FAILED if said else FINE), said


def main(argv: list[str]) -> int:
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "machine":
        print(machine_id())
        return 0
    if command == "calibration" and len(args) >= 2:
        results_dir, machine = Path(args[0]), args[1]
        try:
            stored = calibration.load(results_dir, machine)
            settings = settings_of(args[2:])
        except (ValueError, SelectionError, ManifestError) as exc:  # an unreadable calibration too
            print(f"error: {exc}")
            return BAD_INPUT
        why = calibration_misfit(stored, machine, settings)
        print(why or describe(stored))
        return STALE if why else 0
    if command == "runs" and len(args) == 3:
        before = set(Path(args[2]).read_text().split("\n"))
        stored = calibration.load(Path(args[0]), args[1]) or {}
        tonight, previous = tonight_and_previous(results.run_dirs(Path(args[0]), args[1]), before,
                                                 set(stored.get("runs") or []))
        print(tonight or "")
        print(previous or "")
        return 0
    if command == "health" and len(args) in (1, 2):
        docs = [json.loads((Path(a) / results.RESULTS_FILE).read_text()) for a in args]
        status, said = health(docs[0], docs[1] if len(docs) > 1 else None)
        print("\n".join(said))
        return status
    print(__doc__, file=sys.stderr)
    return BAD_INPUT


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
