#!/usr/bin/env bash
# The nightly job, exactly as CI runs it (.github/workflows/nightly.yml) and as you can
# run it by hand: set up the README's way, calibrate when this machine has no fitting
# calibration, run the nightly preset, then compare tonight's run with the previous
# night's of this machine, write the report and the history.
#
#   bash scripts/nightly.sh [extra run_bench.py options, e.g. --servers actix-web,fastapi]
#
# Options go after `--preset nightly`, so they override the preset's figures too.
# Calibration in the loop: when results/<machine>/calibration.json is missing, or was
# made for another machine or with other settings that shape the figures,
# `run_bench.py calibrate --preset nightly [options]` runs first (two A/A runs), and
# compare uses its per-case thresholds.
#
# Environment: BENCH_MACHINE_ID names the machine (CI runners change host names every
# run); NIGHTLY_RESULTS_DIR (default results) holds the runs and calibrations;
# NIGHTLY_OUT (default nightly) gets summary.md (for a CI job summary), compare.md,
# compare.json, the history charts and run_dir (tonight's run folder).
#
# Exit status (the worst that applies):
#   0  all fine: tonight's run is complete, every case ok, nothing regressed
#   1  a case regressed (compare exited 1: decisively worse than the previous night)
#   2  bad input: options the run refuses (checked before anything runs), make bench
#      exited 0 yet stored no run, or compare refused its input (exited 2)
#   3  a case broke: compare said so (exited 3), or a case ok the previous night is
#      failed, invalid, unverified or missing tonight
#   4  the benchmark itself failed: make bench (set-up, build, run) exited non-zero
#      (make says 2 for any failure) with no broken case to explain it, or stored no run,
#      or the calibration failed, tonight's run is not complete, or a case is not ok
#      tonight that was not ok the previous night either (or there was no previous night)
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
NIGHTLY="$PY -m bench.cli.nightly"
results=${NIGHTLY_RESULTS_DIR:-results}
out=${NIGHTLY_OUT:-nightly}
mkdir -p "$out" "$results"
status=0
worst() { (($1 > status)) && status=$1; return 0; }   # 0 < 1 < 2 < 3 < 4
say() { echo "nightly: $*" >&2; reasons+=("$*"); }
reasons=()

machine=$($NIGHTLY machine) || { echo "nightly: cannot tell this machine's id" >&2; exit 2; }
find "$results/$machine" -mindepth 1 -maxdepth 1 -type d 2>/dev/null > "$out/runs_before"

calibration_note=$($NIGHTLY calibration "$results" "$machine" "$@")
case $? in
  0) calibration="the stored one, $calibration_note" ;;
  10) echo "nightly: calibrating first: $calibration_note" >&2
     $PY run_bench.py calibrate --preset nightly "$@" --results-dir "$results"
     calibrate_status=$?
     if ((calibrate_status == 2)); then
       echo "nightly: run_bench.py calibrate refused the options (exit 2)" >&2
       exit 2
     fi
     made=$($NIGHTLY calibration "$results" "$machine" "$@")
     if (($? == 0)); then
       calibration="made tonight ($calibration_note): $made"
     else
       calibration="none that fits: it was needed ($calibration_note), run_bench.py calibrate exited $calibrate_status, and now: $made"
       say "the calibration tonight failed (run_bench.py calibrate exited $calibrate_status)"
       worst 4
     fi ;;
  *) echo "nightly: cannot check the calibration: $calibration_note" >&2; exit 2 ;;
esac

# ARGS is word-split by make: each option quoted for that shell
make bench ARGS="--preset nightly ${*@Q} --results-dir ${results@Q}"
bench_status=$?

mapfile -t picked < <($NIGHTLY runs "$results" "$machine" "$out/runs_before")
tonight=${picked[0]:-} previous=${picked[1]:-}
if [[ -z $tonight ]]; then
  if ((bench_status == 0)); then
    echo "nightly: make bench exited 0 but no run of machine $machine was stored in $results" >&2
    exit 2
  fi
  echo "nightly: the benchmark failed before storing a run: make bench exited $bench_status" >&2
  exit 4
fi
echo "$tonight" > "$out/run_dir"
$PY run_bench.py report "$tonight" >/dev/null

health=$($NIGHTLY health "$tonight" ${previous:+"$previous"})
health_status=$?
if ((health_status == 3)); then
  say "a case ok the previous night broke tonight"
elif ((health_status != 0)); then
  say "tonight's run shows the benchmark failed"
elif ((bench_status != 0)); then
  say "make bench exited $bench_status"
  health_status=4
fi
worst $health_status

compare_status=0
{
  echo "# Nightly benchmark, machine $machine"
  echo
  echo "Run: $(basename "$tonight") (make bench exited $bench_status)."
  echo
  echo "Calibration (its per-case thresholds are what compare judges by): $calibration."
  echo
  if [[ -n $health ]]; then
    echo "Cases not ok tonight:"
    echo
    sed 's/^/- /' <<< "$health"
    echo
  fi
  if [[ -n $previous ]]; then
    echo "Compared with the previous night's run $(basename "$previous")."
    echo
    $PY run_bench.py compare "$previous" "$tonight" --results-dir "$results" --output "$out/compare.md" >/dev/null
    compare_status=$?
    cat "$out/compare.md" 2>/dev/null
    $PY run_bench.py compare "$previous" "$tonight" --results-dir "$results" --format json --output "$out/compare.json" >/dev/null
  else
    echo "No earlier night of this machine: nothing to compare with yet."
  fi
  echo
  $PY run_bench.py history --machine "$machine" --results-dir "$results" --charts "$out/history"
} > "$out/summary.md"
case $compare_status in
  0) ;;
  1) say "a case regressed (see $out/compare.md)"; worst 1 ;;
  3) say "compare found a broken case (see $out/compare.md)"; worst 3 ;;
  *) say "compare exited $compare_status (bad input; see $out/compare.md)"; worst 2 ;;
esac
{
  echo
  echo "## Verdict: exit $status"
  echo
  if ((${#reasons[@]} == 0)); then echo "All fine."; fi
  for reason in "${reasons[@]}"; do echo "- $reason"; done
} >> "$out/summary.md"
cat "$out/summary.md"
exit $status
