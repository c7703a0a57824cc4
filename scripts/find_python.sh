#!/usr/bin/env bash
# Prints the first Python >= 3.11 (the harness reads TOML with tomllib) among
# $PYTHON_BOOTSTRAP, python3, python3.13, python3.12 and python3.11; exit 1 if none.
for candidate in ${PYTHON_BOOTSTRAP:-} python3 python3.13 python3.12 python3.11; do
  path="$(command -v "$candidate" 2>/dev/null)" || continue
  if "$path" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "$path"
    exit 0
  fi
done
exit 1
