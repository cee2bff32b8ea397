#!/usr/bin/env bash
# Sets everything up, then runs the static checks and the whole test suite, all from the project's .venv
# (first on PATH: the tests' subprocesses, `python3` and `jmsbridge` included, run in it too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
# Bytecode is cached (__pycache__, gitignored) even where the environment says not to, as many CI images
# do: otherwise each pytest worker rewrites every test module again (collecting the suite took 6.6 CPU-s
# instead of 3.1) and each Python process the tests start compiles the project's modules again.
unset PYTHONDONTWRITEBYTECODE
# One check per line: under `set -e` a failure inside an `a && b` list does not stop the script.
echo "== ruff"; ruff check .
ruff format --check .
echo "== mypy --strict"; mypy
echo "== import-linter"; lint-imports
# Two workers (pytest-xdist): most of an end-to-end test is waiting on Spark and the brokers, so two of
# them side by side keep both cores busy; each worker starts its own brokers. The heaviest scenarios
# share one worker (`ONE_AT_A_TIME`, testbed/harness.py). `-n 0` runs in one process.
# The tests marked `alone` run afterwards with nothing beside them: the failover chaos scenario lost or
# held back messages under a parallel suite's load (issue 18, open). Arguments go to one run of all.
if [ $# -gt 0 ]; then
    echo "== pytest"; exec .venv/bin/python -m pytest -q -ra --durations=15 -n 2 --dist loadgroup "$@"
fi
echo "== pytest"; .venv/bin/python -m pytest -q -ra --durations=15 -n 2 --dist loadgroup -m "not alone"
echo "== pytest, alone"; .venv/bin/python -m pytest -q -ra --durations=5 -n 0 -m alone
