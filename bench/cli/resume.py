"""`run --resume RUN` and `run --rerun-failed RUN`: reopen a stored run with its own
settings, after checking that nothing changed that would make new samples incomparable
with the stored ones (bench.storage.resume decides what that is)."""
from __future__ import annotations

from pathlib import Path

from bench.core.settings import SelectionError, Settings, from_public
from bench.infra import environment, versions
from bench.setup.probe import runtime_version
from bench.storage import document, resume, results


class NothingToDo(Exception):
    """The run has nothing left to measure: said, and exit 0."""


def find_run(given: str, results_root: Path) -> Path:
    """A run folder, its results.json, or a run id under the results folder."""
    path = Path(given)
    if path.name == results.RESULTS_FILE:
        path = path.parent
    if (path / results.RESULTS_FILE).exists():
        return path
    matches = [d for d in results.run_dirs(results_root) if d.name == given]
    if len(matches) == 1:
        return matches[0]
    raise SelectionError(f"no run {given!r}: give a run folder, its results.json, or the id "
                         f"of a run under {results_root}")


def reopen(kind: str, given: str, now: Settings, specs: dict) -> tuple[Settings, tuple]:
    """The stored run's settings and (run record, folder), ready for Run(previous=...)."""
    run_dir = find_run(given, now.results_dir)
    run = document.load_run(run_dir)
    stored = run.settings
    if stored.get("token") == "(custom)" and now.token == Settings.token:
        raise SelectionError(f"{run_dir} ran with a custom --token, which results do not "
                             f"store: give the same --token again")
    settings = from_public({"ceiling": False, **stored}, token=now.token,
                           postgres_dsn=now.postgres_dsn, mysql_dsn=now.mysql_dsn)
    env = environment.environment()
    env["machine_id"] = environment.fingerprint(env)
    now_versions = {sid: versions.server_versions(specs[sid], runtime_version)
                    for sid in run.servers if sid in specs}
    changed = resume.differences(run, env, now_versions)
    if changed:
        raise SelectionError(f"cannot {kind.replace('-', ' ')} {run_dir}: {'; '.join(changed)}. "
                             f"New samples would not be comparable with the stored ones; "
                             f"start a new run instead")
    if run.status == results.RUNNING:
        raise SelectionError(f"{run_dir} is still running (another harness is measuring it)")
    if kind == "rerun-failed":
        again = resume.prepare_rerun(run, results.now_iso())
        if not again:
            raise NothingToDo(f"{run_dir}: every case is ok, nothing to measure again")
    elif not run.samples_to_measure() and not run.counts_to_make():
        raise NothingToDo(f"{run_dir} has no unfinished sample (status {run.status}); "
                          f"--rerun-failed measures its failed cases again")
    run.continued(kind, results.now_iso(), env.get("git"))
    return settings, (run, run_dir)
