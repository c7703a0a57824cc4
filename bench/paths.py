"""Where things are: the repository, its server and script folders, the build cache."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SERVERS_DIR = REPO / "servers"
WRK_SCRIPTS_DIR = REPO / "wrk_scripts"
K6_SCRIPTS_DIR = REPO / "k6_scripts"
# Build artefacts (e.g. a Cargo target dir) outlive a clone, so later clones reuse them.
CACHE_DIR = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "webbench"
