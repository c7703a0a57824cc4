#!/usr/bin/env bash
# The test tiers (the Makefile's test targets call this after the set-up):
#
#   scripts/test.sh quick   [BASE]  make test: every test of the harness itself, every
#                                   server's own unit tests, and the per-server checks
#                                   (contract, fuzzing) of the servers whose files changed
#   scripts/test.sh all             make test-all: everything, every server, every
#                                   generator and proxy (what .ci/run runs)
#   scripts/test.sh changed [BASE]  make test-changed: the servers a change selects (a
#                                   harness change selects everything: then as `all`)
#
# BASE: what the change is measured against (bench/cli/changed.py; default the merge
# base with the default branch, else HEAD~1). Each phase is timed; every phase runs even
# after one failed, and the exit status is non-zero when any did.
#
# COVERAGE=1: pytest runs under coverage.py (.coveragerc: bench/, every Python process
# the tests start), and the tier ends with the share of bench/'s lines covered.
# COVERAGE=by-test: the same, each test's data apart (its processes' files in a folder of
# its own, its in-process lines under its name as the context), so that
# scripts/coverage_by_test.py can say what a tier would cover without some tests.
#
# Phases: the servers' own unit tests; pytest's parallel phase (TEST_WORKERS xdist
# workers, default 4: the Makefile gives two per CPU, --dist loadgroup: the tests on fixed ports share a group and run
# on one worker); then the tests marked `measure` alone and serially, so that no other
# test shares the machine with a test that judges speed.
set -uo pipefail
cd "$(dirname "$0")/.."
tier="${1:-}"
base="${2:-}"
py=.venv/bin/python
workers="${TEST_WORKERS:-4}"
case "$tier" in quick|all|changed) ;; *) echo "usage: $0 quick|all|changed [BASE]" >&2; exit 2 ;; esac

timings=$(mktemp)
failed=0
started=$(date +%s)
phase() {                      # phase NAME COMMAND...: run, time, remember a failure
  local name="$1" t0 rc=0; shift
  t0=$(date +%s)
  echo "== $name"
  "$@" || rc=$?
  printf '  %-58s %5d s%s\n' "$name" "$(( $(date +%s) - t0 ))" \
    "$([ "$rc" -eq 0 ] && echo "" || echo "  FAILED (exit $rc)")" >> "$timings"
  [ "$rc" -eq 0 ] || failed=1
}
runner=("$py" -m pytest)
coverage="${COVERAGE:-0}"
if [ "$coverage" = 1 ] || [ "$coverage" = by-test ]; then
  rm -rf .coverage-data && mkdir -p .coverage-data
  rcfile=.coveragerc
  if [ "$coverage" = by-test ]; then
    rcfile=.coverage-data/by-test.rc
    sed 's/^\[run\]$/[run]\ndynamic_context = test_function/' .coveragerc > "$rcfile"
    export BENCH_COVERAGE_BY_TEST="$PWD/.coverage-data/by-test"
  fi
  runner=("$py" -m coverage run --rcfile="$rcfile" -m pytest)
fi
pytest_phase() {               # pytest_phase NAME ARGS...: exit 5 (nothing collected) is a failure
  phase "$1" "${runner[@]}" -p no:cacheprovider "${@:2}"
}

selection=$(mktemp)
case "$tier" in
  all)
    echo "selected servers: every server (make test-all)"
    echo all > "$selection" ;;
  quick)
    "$py" -m bench.cli.changed --rule servers ${base:+--base "$base"} --write "$selection" || exit 2 ;;
  changed)
    "$py" -m bench.cli.changed --rule full ${base:+--base "$base"} --write "$selection" || exit 2
    if [ "$(cat "$selection")" = all ]; then
      exec "$0" all
    fi ;;
esac
servers=$(cat "$selection")
export BENCH_TEST_SERVERS="$servers"
parallel=(-n "$workers" --dist loadgroup)

case "$tier" in
  quick)
    phase "servers' own unit tests (every server)" "$py" -m bench.cli.unit_tests --servers all
    pytest_phase "pytest, parallel ($workers workers): harness; contract of: ${servers:-none}" \
      "${parallel[@]}" -m "not full and not measure"
    pytest_phase "pytest, serial: the tests that measure" -m "measure and not full" ;;
  all)
    phase "servers' own unit tests (every server)" "$py" -m bench.cli.unit_tests --servers all
    # every test is selected, so everything is needed: built here, in a phase of its own,
    # rather than by whichever test comes first (a 10-minute Rust build beside the e2e
    # tests would only make them wait); each is skipped when it is up to date
    phase "builds: every server and Traefik (run_bench.py build)" "$py" run_bench.py build
    phase "tools: oha and k6 (scripts/install_oha.sh, install_k6.sh)" \
      bash -c 'bash scripts/install_oha.sh && bash scripts/install_k6.sh'
    # the Docker tests run, never skip: an engine is started when none answers (and
    # stopped at the end, only if this tier started it), compose v2 is built, and the
    # database images are pulled or built here, each timed
    trap 'bash scripts/docker_engine.sh stop' EXIT
    export BENCH_DOCKER_TESTS=required
    phase "docker: engine, compose v2, database images (run_bench.py images)" \
      bash -c 'bash scripts/docker_engine.sh start && bash scripts/install_docker-compose.sh &&
               '"$py"' run_bench.py images'
    pytest_phase "pytest, parallel ($workers workers): everything but measure" \
      "${parallel[@]}" -m "not measure"
    pytest_phase "pytest, serial: the tests that measure" -m "measure" ;;
  changed)
    if [ -z "$servers" ]; then
      echo "no server's checks to run"
    else
      phase "servers' own unit tests ($servers)" "$py" -m bench.cli.unit_tests --servers "$servers"
      pytest_phase "pytest, parallel ($workers workers): contract and fuzzing of $servers" \
        "${parallel[@]}" -m "server_checks"
    fi ;;
esac

if [ "$coverage" = 1 ] || [ "$coverage" = by-test ]; then
  "$py" -m coverage combine -q --keep --rcfile="$rcfile" .coverage-data \
    $([ "$coverage" = by-test ] && ls -d .coverage-data/by-test/*/ 2>/dev/null) &&
    "$py" -m coverage report --rcfile="$rcfile" > .coverage-data/report.txt
  echo "coverage of bench/ ($tier): $("$py" -m coverage report --rcfile="$rcfile" --format=total) % of its lines (per file: .coverage-data/report.txt)"
fi
echo
echo "test phases (wall seconds):"
cat "$timings"
printf '  %-58s %5d s\n' "whole tier ($tier)" "$(( $(date +%s) - started ))"
rm -f "$timings" "$selection"
exit "$failed"
