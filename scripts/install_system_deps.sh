#!/usr/bin/env bash
# Installs the distribution packages the project needs, only those that are missing.
# What they are, per purpose, is setup/packages.txt (the one list: `run_bench.py doctor`
# and a unit test read it too); which of them this machine lacks is decided by
# `python3 -m bench.setup.plan`, which also installs a toolchain (Go, Node.js) from the
# distribution only when its version is new enough for the servers' manifests, and says
# which servers will be unavailable otherwise.
#
#   scripts/install_system_deps.sh               what `make bench` needs
#   scripts/install_system_deps.sh --for-tests   and what `make test` needs
#
# Any other argument is refused: a misspelt flag must not silently install less.
set -euo pipefail
cd "$(dirname "$0")/.."

purposes=run
case "$#:${1:-}" in
  0:) ;;
  1:--for-tests) purposes=run,tests ;;
  *) echo "usage: $0 [--for-tests]" >&2; exit 2 ;;
esac

if [[ $(id -u) -eq 0 ]]; then sudo=(); elif command -v sudo >/dev/null; then sudo=(sudo); else sudo=(none); fi
apt_install() {
  if [[ "${sudo[0]:-}" == none ]] || ! command -v apt-get >/dev/null; then
    echo "missing system packages: $*" >&2
    echo "install them as root with your package manager (Debian/Ubuntu: apt-get install -y $*)" >&2
    exit 1
  fi
  echo "installing system packages: $*"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# The harness needs Python >= 3.11 (tomllib); Ubuntu 22.04's python3 is 3.10, and its
# python3.11 package is the way there. scripts/find_python.sh is what the Makefile uses.
if ! python="$(bash scripts/find_python.sh)"; then
  if command -v apt-cache >/dev/null && apt-cache show python3.11 >/dev/null 2>&1; then
    apt_install python3.11 python3.11-venv python3.11-dev
    python="$(bash scripts/find_python.sh)"
  else
    echo "error: no Python >= 3.11 found (python3 is $(python3 --version 2>&1 || echo missing));" \
         "install one and run again (README, Prerequisites)" >&2
    exit 1
  fi
fi

# rustup's and the Go tarball's usual places, as the Makefile puts them on PATH
export PATH="$HOME/.cargo/bin:$PATH:/usr/local/go/bin"
# (a failing plan stops the set-up here: its output is taken whole before it is used)
wanted="$(PYTHON_BOOTSTRAP="$python" "$python" -m bench.setup.plan --for "$purposes")"
mapfile -t missing < <(printf '%s\n' "$wanted" | grep -v '^$' || true)
if ((${#missing[@]})); then
  apt_install "${missing[@]}"
fi
