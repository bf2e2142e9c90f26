#!/usr/bin/env bash
# Creates .venv (unless VENV says otherwise) and installs hf-vaswani with the extras given as arguments.
# torch is installed first, pinned, so that pip never resolves an unpinned torch to a multi-GB CUDA build.
# CPU-only machines elsewhere can add: --index-url https://download.pytorch.org/whl/cpu
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
extras="${1:-}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".${extras:+[$extras]}"
