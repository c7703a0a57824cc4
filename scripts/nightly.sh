#!/usr/bin/env bash
# The nightly job, exactly as CI runs it (.github/workflows/nightly.yml) and as you can
# run it by hand: set up the README's way, run the nightly preset, then compare tonight's
# run with the previous one of this machine, write the report and the history.
#
#   bash scripts/nightly.sh [extra run_bench.py options, e.g. --servers actix-web,fastapi]
#
# Writes nightly/summary.md (comparison + history, for a CI job summary), and exits 1
# when a case regressed, 0 otherwise (also when there is no previous run to compare to).
# BENCH_MACHINE_ID names the machine (CI runners change host names every run).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
out=nightly
mkdir -p "$out"

make bench ARGS="--preset nightly $*"
bench_status=$?

machine=$($PY -c 'from bench.infra.environment import environment, fingerprint; print(fingerprint(environment()))')
mapfile -t runs < <(find "results/$machine" -mindepth 2 -maxdepth 2 -name results.json -printf '%h\n' 2>/dev/null | sort)
if ((${#runs[@]} == 0)); then
  echo "nightly: no run of machine $machine was stored (make bench exited $bench_status)" >&2
  exit 2
fi
tonight=${runs[-1]}
$PY run_bench.py report "$tonight" >/dev/null

compare_status=0
{
  echo "# Nightly benchmark, machine $machine"
  echo
  echo "Run: $(basename "$tonight") (make bench exited $bench_status)."
  echo
  if ((${#runs[@]} >= 2)); then
    $PY run_bench.py compare "${runs[-2]}" "$tonight" --output "$out/compare.md" >/dev/null
    compare_status=$?
    cat "$out/compare.md"
    $PY run_bench.py compare "${runs[-2]}" "$tonight" --format json --output "$out/compare.json" >/dev/null
  else
    echo "No earlier run of this machine: nothing to compare with yet."
  fi
  echo
  $PY run_bench.py history --machine "$machine" --charts "$out/history"
} > "$out/summary.md"
cat "$out/summary.md"
echo "$tonight" > "$out/run_dir"
if ((compare_status == 1)); then
  echo "nightly: a case regressed (see $out/compare.md)" >&2
  exit 1
fi
exit $((compare_status == 2 ? 2 : 0))
