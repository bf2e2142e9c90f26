#!/usr/bin/env bash
# Creates .venv (unless VENV says otherwise) and installs hf-vaswani with the extras given as arguments.
# torch is installed first, pinned, so that pip never resolves an unpinned torch to a multi-GB CUDA build.
# CPU-only machines elsewhere can add: --index-url https://download.pytorch.org/whl/cpu
# The project is installed in editable mode, so a change to its code needs no reinstall: pip runs again only when
# pyproject.toml, the extras or this script changed since the last set-up of this environment (a stamp in the venv
# records them; HF_VASWANI_REINSTALL=1 reinstalls anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
extras="${1:-}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating the environment $VENV"
  python3 -m venv "$VENV"
fi
. "$VENV/bin/activate"
stamp="$VENV/.hf-vaswani-setup-${extras:-core}"
wanted="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1) ${extras:-core}"
if [ "${HF_VASWANI_REINSTALL:-0}" != 1 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "setup: $VENV is up to date for hf-vaswani${extras:+[$extras]} (pyproject.toml unchanged): nothing to install"
  exit 0
fi
# pip's progress bars on the first set-up of an environment, one line per package afterwards.
quiet=()
if ls "$VENV"/.hf-vaswani-setup-* >/dev/null 2>&1; then
  quiet=(-q)
fi
echo "setup: pip (upgrading itself)"
python -m pip install "${quiet[@]}" --upgrade pip
echo "setup: torch 2.13.0"
python -m pip install "${quiet[@]}" "torch==2.13.0"
echo "setup: hf-vaswani${extras:+[$extras]} and its dependencies (editable)"
python -m pip install "${quiet[@]}" -e ".${extras:+[$extras]}"
if [[ ",$extras," == *",test,"* ]]; then
  # TransformerLens, for the test that checks activation patching against its hook points. Its metadata asks for
  # typeguard>=4.2 and inseq's (the explain extra) for typeguard<=2.13.3, so pip cannot resolve the two together,
  # though neither imports typeguard: it is installed without its dependencies, plus einops, the one package the
  # test's path through it (boot_transformers, run_with_cache, run_with_hooks) imports that the test extra lacks.
  echo "setup: transformer-lens 4.3.0 (without its dependencies) and einops"
  python -m pip install "${quiet[@]}" --no-deps "transformer-lens==4.3.0" "einops==0.8.2"
fi
echo "$wanted" > "$stamp"
echo "setup: done"
