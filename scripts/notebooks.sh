#!/usr/bin/env bash
# Sets up .venv with what the course notebooks need (the [notebooks] extra: the toolkit, Captum, the offline MiniLM,
# JupyterLab) and opens JupyterLab on notebooks/, offline. Extra arguments go to `jupyter lab` (e.g. --port 8890,
# --no-browser). `bash scripts/setup.sh notebooks` does the set-up alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh notebooks
. "${VENV:-.venv}/bin/activate"
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"
exec jupyter lab notebooks/ "$@"
