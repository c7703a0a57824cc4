#!/usr/bin/env bash
# `make setup` (and the set-up part of `make test`): every step that installs or builds,
# each timed, with a table of the times at the end.
#
#   scripts/setup.sh             what `make bench` needs
#   scripts/setup.sh --for-tests and what the tests need
#
# The order is what depends on what: the system packages first (the virtualenv's
# mysqlclient needs their headers, everything needs wrk and the databases); then three
# tracks at once, because on 2 cores a download or a single-threaded link leaves a core
# idle that another track can use:
#   - the virtualenv, then the servers' and proxies' builds (`run_bench.py build`);
#   - oha (cargo install, mostly compiling), in the background from the start;
#   - k6 (go install, downloads then compiling), in the background after oha's start;
#   - the Rust crates and Go modules fetched while pip installs, so the builds start
#     with their downloads done.
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

# a background step's output goes to its own log, shown whole when it fails
background() {
  local name="$1" log="$logs/$2.log"; shift 2
  step "$name" "$@" > "$log" 2>&1
}

report() {
  echo
  echo "set-up steps (wall seconds; the background ones overlap the others):"
  printf 'whole set-up\t%s\t0\n' "$(( ($(date +%s%N) - started) / 1000000 ))" >> "$timings"
  awk -F'\t' '{ printf "  %-44s %7.1f s%s\n", $1, $2 / 1000, ($3 == 0 ? "" : "  FAILED (exit " $3 ")") }' "$timings"
}
trap report EXIT

step "system packages (apt)" bash scripts/install_system_deps.sh "${deps_flag[@]}"

background "oha (cargo install, background)" oha bash scripts/install_oha.sh &
oha_pid=$!
background "k6 (go install, background)" k6 bash scripts/install_k6.sh &
k6_pid=$!
prefetch() {
  if command -v cargo >/dev/null; then
    (cd servers && cargo fetch --locked --quiet)
  fi
  if command -v go >/dev/null || [[ -x /usr/local/go/bin/go ]]; then
    (cd servers/gin && PATH="$PATH:/usr/local/go/bin" go mod download)
  fi
}
background "crates and Go modules fetched (background)" prefetch prefetch &
prefetch_pid=$!

step "virtualenv (pip, pinned requirements)" make --no-print-directory venv
# a failed fetch is not fatal here: the build fetches again and reports its own error
wait "$prefetch_pid" || echo "note: prefetching failed (see $logs/prefetch.log); the builds fetch again"
# the servers' builds and the --behind proxies built from source (Traefik, from its Go
# module: minutes when cold, its modules fetched by the build itself)
step "server and proxy builds (run_bench.py build)" .venv/bin/python run_bench.py build

if ! wait "$oha_pid"; then
  echo "error: installing oha failed; its log ($logs/oha.log):" >&2
  tail -n 30 "$logs/oha.log" >&2
  exit 1
fi
tail -n 1 "$logs/oha.log"
if ! wait "$k6_pid"; then
  echo "error: installing k6 failed; its log ($logs/k6.log):" >&2
  tail -n 30 "$logs/k6.log" >&2
  exit 1
fi
tail -n 1 "$logs/k6.log"
