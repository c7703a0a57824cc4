"""An A/A calibration measured on one machine (bench.analysis.noise), kept beside that
machine's runs: results/<machine id>/calibration.json. Format 2 holds per case the
thresholds of each figure, the figures they came from, the comparability key and the two
runs; format 1 (no "format" key) held req/s thresholds only and is still read."""
from __future__ import annotations

import json
import os
from pathlib import Path

from bench.storage.results import now_iso

FILE = "calibration.json"


class CalibrationError(ValueError):
    """A calibration file that cannot be read; the message names the file."""


def path_for(results_root: Path, machine_id: str) -> Path:
    return Path(results_root) / machine_id / FILE


def save(results_root: Path, machine_id: str, calibration: dict) -> Path:
    """Write `calibration` (bench.analysis.noise.calibrate) for the machine, atomically."""
    path = path_for(results_root, machine_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"machine_id": machine_id, "created_at": now_iso(), **calibration}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)
    return path


def load(results_root: Path, machine_id: str) -> dict | None:
    """The machine's calibration with its "path", or None when it has none."""
    path = path_for(results_root, machine_id)
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CalibrationError(f"cannot read the calibration {path}: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("thresholds"), dict):
        raise CalibrationError(f"{path} is not a calibration (no \"thresholds\" object)")
    doc["path"] = str(path)
    return doc
