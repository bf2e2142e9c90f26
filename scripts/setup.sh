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
if [[ ",$extras," == *",test,"* ]]; then
  # TransformerLens, for the test that checks activation patching against its hook points. Its metadata asks for
  # typeguard>=4.2 and inseq's (the explain extra) for typeguard<=2.13.3, so pip cannot resolve the two together,
  # though neither imports typeguard: it is installed without its dependencies, plus einops, the one package the
  # test's path through it (boot_transformers, run_with_cache, run_with_hooks) imports that the test extra lacks.
  python -m pip install -q --no-deps "transformer-lens==4.3.0" "einops==0.8.2"
fi
