#!/usr/bin/env bash
# Sets up .venv (with gradio) and starts the translate-and-inspect demo on the shipped checkpoint, offline,
# on http://127.0.0.1:7860 . Extra arguments go to `hf-vaswani demo` (e.g. --port 8000, --model PATH).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh demo
. "${VENV:-.venv}/bin/activate"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" GRADIO_ANALYTICS_ENABLED=False
echo "demo: starting hf-vaswani demo"
exec hf-vaswani demo "$@"
