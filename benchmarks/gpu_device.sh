#!/usr/bin/env bash
# benchmarks/gpu.py on a borrowed GPU machine whose Python already has its own torch and an older transformers,
# and which cannot download anything. Two steps:
#
#   bash benchmarks/gpu_device.sh fetch   # here, online: wheels of what the GPU machine lacks into .whl/
#   bash benchmarks/gpu_device.sh run     # there, from the repository root, with .whl/ copied along
#
# `run` installs the wheels into /tmp/site (never over the machine's own packages), prints the versions and the
# GPU, then runs gpu.py under a time limit (GPU_TIMEOUT seconds, default 480) with output unbuffered. Results go to
# $OUT when that is set (the device tool's folder of files to bring back), else to benchmarks/results/.
# GPU_ARGS adds arguments to gpu.py, e.g. GPU_ARGS="--device cpu --smoke" to check the whole path without a GPU;
# GPU_WHEELS names another folder of wheels than .whl/.
set -euo pipefail
cd "$(dirname "$0")/.."

# The model is tested with transformers 5.24 (the version pyproject.toml pins: its cache argument is `cache`);
# regex is the one of its requirements an older image may hold too old a version of.
WHEELS=("transformers==5.24.0" "regex==2026.11.19")
PYTHON_VERSION="${GPU_PYTHON_VERSION:-3.12}"

WHEEL_DIR="${GPU_WHEELS:-.whl}"

fetch() {
  mkdir -p "$WHEEL_DIR"
  local platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64)
  "${PYTHON:-python3}" -m pip download --no-deps --only-binary=:all: --python-version "$PYTHON_VERSION" \
    --implementation cp "${platforms[@]}" -d "$WHEEL_DIR" "${WHEELS[@]}"
  ls -l "$WHEEL_DIR"
}

run() {
  local python="${PYTHON:-python3}" out="${OUT:-benchmarks/results}"
  if compgen -G "$WHEEL_DIR/*.whl" >/dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      "$WHEEL_DIR"/*.whl
    export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
  fi
  "$python" -c 'import sys, torch, transformers
print("python", sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__,
      "cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))'
  if command -v nvidia-smi >/dev/null 2>&1; then nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; fi
  mkdir -p "$out"
  # shellcheck disable=SC2086  # GPU_ARGS is a list of arguments
  PYTHONUNBUFFERED=1 timeout "${GPU_TIMEOUT:-480}" "$python" benchmarks/gpu.py --json "$out/gpu.json" ${GPU_ARGS:-} \
    2>&1 | tee "$out/gpu.log"
}

case "${1:-}" in
  fetch) fetch ;;
  run) run ;;
  *)
    echo "usage: bash benchmarks/gpu_device.sh fetch|run" >&2
    exit 2
    ;;
esac
