#!/usr/bin/env bash
# Runs the same tests N times in a row, one process each time, and stops at the first run that fails:
# how the heavy scenarios are shown to pass repeatedly (issue 42). Every delivery mode and standby kind
# (JMSBRIDGE_ALL_MODES=1) unless the environment says otherwise.
#   scripts/repeat.sh 10 tests/e2e/test_crash.py
#   scripts/repeat.sh 10 tests/e2e/test_failover.py
# Each run's output goes to $REPEAT_LOGS/<run>.log (default repeat-logs/, gitignored); one line per run on
# stdout. It tests the tree it runs in: edits made meanwhile change what the next job imports (CONTRIBUTING.md).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
    echo "usage: scripts/repeat.sh TIMES PYTEST-ARGS..." >&2
    exit 2
fi
times=$1
shift
export PATH="$PWD/.venv/bin:$PATH" JMSBRIDGE_ALL_MODES="${JMSBRIDGE_ALL_MODES:-1}"
logs="${REPEAT_LOGS:-repeat-logs}"
mkdir -p "$logs"
for run in $(seq 1 "$times"); do
    started=$(date +%s)
    .venv/bin/python -m pytest -q -n 0 -p no:cacheprovider "$@" > "$logs/$run.log" 2>&1
    status=$?
    echo "run $run of $times: exit $status in $(( $(date +%s) - started )) s: $(tail -n 1 "$logs/$run.log")"
    [ "$status" -eq 0 ] || exit "$status"
done
