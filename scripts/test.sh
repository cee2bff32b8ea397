#!/usr/bin/env bash
# Sets everything up, then runs the static checks and the whole test suite, all from the project's .venv
# (first on PATH: the tests' subprocesses, `python3` and `jmsbridge` included, run in it too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PWD/.venv/bin:$PATH"
echo "== ruff"; ruff check . && ruff format --check .
echo "== mypy --strict"; mypy
echo "== import-linter"; lint-imports
echo "== pytest"; .venv/bin/python -m pytest -q -ra --durations=15 "$@"
