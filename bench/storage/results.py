"""The results file: its schema, where runs live, and writing it safely.

One folder per run under `results/`, holding `results.json` (validated against
`bench/storage/schema/results.schema.json`), the servers' logs and the rendered tables.
The document is validated and rewritten after every sample, atomically, so an
interruption or a crash loses nothing that was measured. Older schema versions are
migrated on load (`bench.storage.migrate`), so every old run still renders.

This module handles the JSON form; the typed records that write it are in
bench.storage.document. Readers (analysis, report, compare, history) read the JSON form.
"""
from __future__ import annotations

import hashlib
import json
import os
import socket
from datetime import datetime, timezone
from pathlib import Path

import jsonschema

from bench.storage import migrate

SCHEMA_VERSION = 3
SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
SCHEMA_PATH = SCHEMA_DIR / "results.schema.json"
RESULTS_FILE = "results.json"
# the readable verification reports, beside the results (tables.md links to it)
VERIFICATION_REPORT = "verification.txt"

# Case statuses. Only "ok" rows are ranked and compared; every other status is shown
# with its reason, never dropped.
OK = "ok"
INVALID = "invalid"                        # measured, but errors above the threshold
FAILED = "failed"                          # did not build/start, died, or wrk failed
VERIFICATION_FAILED = "verification failed"
INTERRUPTED = "interrupted"
PENDING = "pending"
STATUSES = (OK, INVALID, FAILED, VERIFICATION_FAILED, INTERRUPTED, PENDING)
# A run's statuses: running, then complete, or interrupted or failed (as above)
RUNNING = "running"
COMPLETE = "complete"


class ResultsError(ValueError):
    pass


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    host = socket.gethostname().split(".")[0] or "host"
    return f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{host}"


_SCHEMAS: dict[int, dict] = {}
_VALIDATORS: dict[int, jsonschema.protocols.Validator] = {}


def schema(version: int = SCHEMA_VERSION) -> dict:
    if version not in _SCHEMAS:
        name = "results.schema.json" if version == SCHEMA_VERSION else f"results.v{version}.schema.json"
        _SCHEMAS[version] = json.loads((SCHEMA_DIR / name).read_text())
    return _SCHEMAS[version]


# the digests of the cases each schema version already passed, so that a save checks only
# the cases that changed: a run saves after every sample, and checking all of a 100-case
# document took about a second each time (a run's cost grew with the square of its cases)
_VALID_CASES: dict[int, set[str]] = {}
_VALID_CASES_KEPT = 100_000


def _validator(version: int) -> jsonschema.protocols.Validator:
    # one validator per version, built once: jsonschema.validate() would check the schema
    # against its meta-schema on every call, which is most of the time of a save
    if version not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(schema(version))
        cls.check_schema(schema(version))
        _VALIDATORS[version] = cls(schema(version))
    return _VALIDATORS[version]


def _refused(exc: jsonschema.ValidationError, version: int) -> ResultsError:
    where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
    return ResultsError(f"results.json does not match schema version {version} "
                        f"at {where}: {exc.message}")


def validate(doc: dict, version: int = SCHEMA_VERSION) -> None:
    """Refuses a document the schema refuses. A case identical to one this version
    already passed is not checked again: the schema constrains `cases` only item by item
    (tests/unit/test_results.py checks that it still does), so the document with only
    its new cases is valid exactly when the whole one is."""
    validator = _validator(version)
    cases = doc.get("cases") if isinstance(doc, dict) else None
    passed = _VALID_CASES.setdefault(version, set())
    digests = []
    if isinstance(cases, list):
        digests = [_digest(c) for c in cases]
        doc = {**doc, "cases": [c for c, d in zip(cases, digests)
                                if d is None or d not in passed]}
    try:
        validator.validate(doc)
    except jsonschema.ValidationError:
        try:       # again on the whole document, for the path of the case at fault
            validator.validate(doc if cases is None else {**doc, "cases": cases})
        except jsonschema.ValidationError as exc:
            raise _refused(exc, version) from exc
        raise AssertionError("a document valid whole, but not without its known cases")
    if len(passed) > _VALID_CASES_KEPT:
        passed.clear()
    passed.update(d for d in digests if d is not None)


def _digest(case) -> str | None:
    """The case's identity for _VALID_CASES; None (always checked) if it is not JSON."""
    try:
        return hashlib.sha1(json.dumps(case, sort_keys=True).encode()).hexdigest()
    except (TypeError, ValueError):
        return None


def save(doc: dict, run_dir: Path) -> Path:
    """Validate, then write atomically: a reader (or a crash) never sees half a file, and
    a document that breaks the schema is refused at once, not when someone loads it."""
    validate(doc)
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / RESULTS_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n")
    os.replace(tmp, path)
    return path


def load(path: Path) -> dict:
    """A results.json, or a run folder holding one."""
    path = Path(path)
    if path.is_dir():
        path = path / RESULTS_FILE
    if not path.exists():
        raise ResultsError(f"no results at {path}")
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not valid JSON: {exc}") from exc
    version = doc.get("schema_version") if isinstance(doc, dict) else None
    if version not in migrate.READABLE:
        raise ResultsError(f"{path} has schema version {version!r}; this harness reads "
                           f"versions {', '.join(map(str, migrate.READABLE))}")
    validate(doc, version)
    # not validated again: readers are lenient, so a document of an older version renders
    # even with a key that schema 3 does not know (bench.storage.document refuses it)
    return migrate.to_current(doc)


def run_dir(results_root: Path, machine_id: str, run_id: str) -> Path:
    """Runs are kept per machine (results/<machine id>/<run id>/), so one box's nightly
    runs form a series of their own."""
    return Path(results_root) / machine_id / run_id


def run_dirs(results_root: Path, machine_id: str | None = None) -> list[Path]:
    """Every run folder under results_root (per machine, or flat as schema 1 kept them),
    oldest first: run ids start with a UTC timestamp, so the name order is the time order."""
    root = Path(results_root)
    found = list(root.glob(f"*/{RESULTS_FILE}")) + list(root.glob(f"*/*/{RESULTS_FILE}"))
    dirs = [p.parent for p in found]
    if machine_id is not None:
        dirs = [d for d in dirs if d.parent.name == machine_id]
    return sorted(dirs, key=lambda d: d.name)


def latest_run(results_root: Path) -> Path:
    runs = [d for d in run_dirs(results_root) if not d.name.startswith("verify-")]
    if not runs:
        raise ResultsError(f"no runs under {results_root}: run `python run_bench.py` first")
    return runs[-1]
