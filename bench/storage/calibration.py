"""Per-case thresholds measured on one machine (an A/A calibration), kept beside that
machine's runs: results/<machine id>/calibration.json."""
from __future__ import annotations

import json
import os
from pathlib import Path

from bench.storage.results import now_iso

FILE = "calibration.json"


def path_for(results_root: Path, machine_id: str) -> Path:
    return Path(results_root) / machine_id / FILE


def save(results_root: Path, machine_id: str, thresholds: dict[str, float], runs: list[str],
         settings: dict) -> Path:
    path = path_for(results_root, machine_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"machine_id": machine_id, "created_at": now_iso(), "runs": runs,
           "settings": settings, "thresholds": thresholds}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)
    return path


def load(results_root: Path, machine_id: str) -> dict | None:
    path = path_for(results_root, machine_id)
    if not path.exists():
        return None
    doc = json.loads(path.read_text())
    doc["path"] = str(path)
    return doc
