#!/usr/bin/env bash
# Sets up a fresh environment and runs the whole test suite (what CI runs); with --fast first, only the tests not
# marked slow (the fast lane, tests/README.md). Other arguments go to pytest.
set -euo pipefail
markers=()
if [ "${1:-}" = "--fast" ]; then
  shift
  markers=(-m "not slow")
fi
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium could not be installed: browser tests will be skipped"
  else
    echo "chromium is not installed (apt-get install chromium): browser tests will be skipped"
  fi
fi
. "${VENV:-.venv}/bin/activate"
echo "test: ruff check and ruff format --check"
ruff check .
ruff format --check .
# Two workers (the machine's two cores), each test file on one worker so its module fixtures are built once:
# 742 s instead of 1160 s for the whole suite on a 2-core machine. PYTEST_WORKERS=0 runs in one process.
echo "test: pytest on ${PYTEST_WORKERS:-2} workers"
python -m pytest -q -n "${PYTEST_WORKERS:-2}" --dist loadfile "${markers[@]}" "$@"
