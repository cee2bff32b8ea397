#!/usr/bin/env bash
# Sets everything up, then runs the static checks and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "== ruff"; ruff check . && ruff format --check .
echo "== mypy --strict"; mypy
echo "== import-linter"; lint-imports
echo "== pytest"; python3 -m pytest -q -ra --durations=15 "$@"
