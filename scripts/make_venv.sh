#!/usr/bin/env bash
# The harness's virtualenv (.venv), made once per requirements.txt and Python on this
# machine and shared by every checkout: the environment itself lives in the harness cache
# (<cache>/venvs/<key>, key = the SHA-256 of the interpreter's path and version and of
# requirements.txt) and .venv is a symbolic link to it. A fresh clone then links an
# existing environment in milliseconds instead of downloading and installing about 100
# pinned packages again (50 s here: pip's cache keeps nothing of these downloads), as CI's
# every fresh clone did. The environment is complete only once its .complete marker
# exists: a half-made one (Ctrl-C, a failed download) is made again. flock serialises two
# checkouts making the same one. No checkout writes into it: no package is installed by
# a test, and coverage.py's .pth acts only when the coverage environment asks it to.
#
# A .venv that is a folder (made before this script) is replaced by the link.
set -euo pipefail
cd "$(dirname "$0")/.."
python=$(bash scripts/find_python.sh) || { echo "no Python >= 3.11: run make setup" >&2; exit 1; }
cache="${XDG_CACHE_HOME:-$HOME/.cache}/webbench/venvs"
key=$({ "$python" -c 'import sys; print(sys.executable, sys.version)'; cat requirements.txt; } \
      | sha256sum | cut -c1-16)
target="$cache/$key"
mkdir -p "$cache"
exec 9>"$cache/$key.lock"
flock 9
if [ ! -f "$target/.complete" ]; then
  rm -rf "$target"
  "$python" -m venv "$target"
  "$target/bin/python" -m pip install -q --disable-pip-version-check -r requirements.txt
  touch "$target/.complete"
fi
if [ -e .venv ] && [ ! -L .venv ]; then
  rm -rf .venv
fi
ln -sfn "$target" .venv
