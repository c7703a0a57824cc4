#!/usr/bin/env bash
# `make setup` (and the set-up part of `make test`): every step that installs, each
# timed, with a table of the times at the end.
#
#   scripts/setup.sh             what `make bench` needs
#   scripts/setup.sh --for-tests and what the tests need
#
# The system packages first (the virtualenv's mysqlclient needs their headers), then the
# virtualenv. Nothing is built here: each server and Traefik are built by the first run
# or test that needs them (bench.infra.server.build, cached), and oha and k6 are
# installed on first use (bench/setup/install.py), so a `make test` that never starts a
# Rust server or sends oha's load spends no minutes compiling them.
set -euo pipefail
cd "$(dirname "$0")/.."
case "$#:${1:-}" in
  0:) deps_flag=() ;;
  1:--for-tests) deps_flag=(--for-tests) ;;
  *) echo "usage: $0 [--for-tests]" >&2; exit 2 ;;
esac

export PATH="$HOME/.cargo/bin:$PATH"
logs="${XDG_CACHE_HOME:-$HOME/.cache}/webbench/setup-logs"
mkdir -p "$logs"
timings="$logs/timings.tsv"
: > "$timings"
started=$(date +%s%N)

# step NAME COMMAND...: runs it, appends "NAME<TAB>seconds<TAB>exit status" to the table
step() {
  local name="$1"; shift
  local t0 rc=0
  t0=$(date +%s%N)
  "$@" || rc=$?
  printf '%s\t%s\t%s\n' "$name" "$(( ($(date +%s%N) - t0) / 1000000 ))" "$rc" >> "$timings"
  return "$rc"
}

report() {
  echo
  echo "set-up steps (wall seconds):"
  printf 'whole set-up\t%s\t0\n' "$(( ($(date +%s%N) - started) / 1000000 ))" >> "$timings"
  awk -F'\t' '{ printf "  %-44s %7.1f s%s\n", $1, $2 / 1000, ($3 == 0 ? "" : "  FAILED (exit " $3 ")") }' "$timings"
}
trap report EXIT

step "system packages (apt)" bash scripts/install_system_deps.sh "${deps_flag[@]}"
step "virtualenv (pip, pinned requirements)" make --no-print-directory venv
