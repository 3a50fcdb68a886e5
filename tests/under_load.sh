#!/usr/bin/env bash
# Run a test file N times while busy processes load every core, and count the failures:
#   bash tests/under_load.sh tests/test_watch.py 50 [BUSY]
# BUSY defaults to twice the core count. Exit 1 if any run failed; the failed runs' output is
# kept in $TMPDIR/under-load-RUN.log.
set -u
target=${1:?a test file}
runs=${2:-50}
busy=${3:-$(( $(nproc) * 2 ))}
python=${PYTHON:-.venv/bin/python}
pids=()
for _ in $(seq 1 "$busy"); do
  "$python" -c "while True: pass" &
  pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' EXIT
failed=0
for run in $(seq 1 "$runs"); do
  log="${TMPDIR:-/tmp}/under-load-$run.log"
  if "$python" -m pytest -q -p no:cacheprovider "$target" > "$log" 2>&1; then
    rm -f "$log"
  else
    failed=$((failed + 1))
    echo "run $run failed: $log"
  fi
done
echo "$target: $((runs - failed)) of $runs runs passed with $busy busy processes on $(nproc) cores"
[ "$failed" -eq 0 ]
