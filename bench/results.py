"""The result document: its schema, where runs live, and writing it safely.

One folder per run under `results/`, holding `results.json` (validated against
`bench/schema/results.schema.json`), the servers' logs and the rendered tables. The
document is rewritten after every case, atomically, so an interruption or a crash
loses nothing that was measured.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import jsonschema

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "results.schema.json"
RESULTS_FILE = "results.json"

# Case statuses. Only "ok" rows are ranked and compared; every other status is shown
# with its reason, never dropped.
OK = "ok"
INVALID = "invalid"                        # measured, but errors above the threshold
FAILED = "failed"                          # did not build/start, died, or wrk failed
VERIFICATION_FAILED = "verification failed"
INTERRUPTED = "interrupted"
PENDING = "pending"
STATUSES = (OK, INVALID, FAILED, VERIFICATION_FAILED, INTERRUPTED, PENDING)


class ResultsError(ValueError):
    pass


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id() -> str:
    host = socket.gethostname().split(".")[0] or "host"
    return f"{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}-{host}"


def _command_output(argv: list[str]) -> str | None:
    if not shutil.which(argv[0]):
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else None


def environment() -> dict:
    """The machine a run ran on: enough to know whether two runs are comparable."""
    import psutil
    cpu_model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    repo = Path(__file__).resolve().parent.parent
    return {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "kernel": platform.release(),
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "wrk": _command_output(["wrk", "-v"]),
        "rustc": _command_output(["rustc", "--version"]),
        "git_commit": _command_output(["git", "-C", str(repo), "rev-parse", "HEAD"]),
        "load_average_at_start": list(os.getloadavg()),
    }


def new_document(run_id: str, settings: dict, env: dict) -> dict:
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "status": "running",
        "started_at": now_iso(),
        "finished_at": None,
        "settings": settings,
        "environment": env,
        "databases": {},
        "builds": {},
        "verification": {},
        "cases": [],
    }


def validate(doc: dict) -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top level)"
        raise ResultsError(f"results.json does not match schema version {SCHEMA_VERSION} "
                           f"at {where}: {exc.message}") from exc


def save(doc: dict, run_dir: Path) -> Path:
    """Write atomically: a reader (or a crash) never sees half a file."""
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
    if version != SCHEMA_VERSION:
        raise ResultsError(f"{path} has schema version {version!r}; this harness reads "
                           f"version {SCHEMA_VERSION}")
    validate(doc)
    return doc


def latest_run(results_root: Path) -> Path:
    runs = sorted(p for p in Path(results_root).glob(f"*/{RESULTS_FILE}"))
    if not runs:
        raise ResultsError(f"no runs under {results_root}: run `python run_bench.py` first")
    # run ids start with a UTC timestamp, so the name order is the time order
    return max(runs, key=lambda p: p.parent.name).parent
