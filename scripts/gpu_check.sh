#!/usr/bin/env bash
# On a machine with an NVIDIA GPU (Node not needed): builds the engine with plain CMake for this GPU,
# runs every C++ test (the CUDA ones run in full there), then optionally the benchmarks side by side
# with PyTorch (scripts/run_benchmarks.sh). Logs and results go to OUT_DIR.
#
# usage: scripts/gpu_check.sh OUT_DIR [--data DIR] [--configs a,b] [--epochs N] [--no-bench] [--no-tests]
# env:   NNSTUDIO_CUDA_ARCHITECTURES  e.g. 90 (default: the GPU's compute capability)
#        BUILD_DIR                    default build/gpu
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${1:?usage: scripts/gpu_check.sh OUT_DIR [--data DIR] [--configs a,b] [--epochs N] [--no-bench] [--no-tests]}"
shift
DATA="" CONFIGS="" EPOCHS=3 BENCH=1 TESTS=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --no-bench) BENCH=0; shift ;;
    --no-tests) TESTS=0; shift ;;
    *) echo "gpu_check: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT_DIR"
BUILD_DIR="${BUILD_DIR:-$ROOT/build/gpu}"
ARCH="${NNSTUDIO_CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')}"
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader | tee "$OUT_DIR/gpu.txt"

start=$(date +%s)
cmake -S "$ROOT/native" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DNNSTUDIO_CUDA_ARCHITECTURES="$ARCH" \
  >"$OUT_DIR/build.log" 2>&1 && cmake --build "$BUILD_DIR" -j "$(nproc)" >>"$OUT_DIR/build.log" 2>&1 \
  || { tail -50 "$OUT_DIR/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s (sm_$ARCH)"

status=0
if [[ $TESTS == 1 ]]; then
  # -V keeps every test's own lines (each check, its error figures) in the log
  ctest --test-dir "$BUILD_DIR" -V --no-tests=error >"$OUT_DIR/ctest.log" 2>&1 || status=1
  grep -E "FAIL|[0-9]+ passed, [0-9]+ failed|skipped|tests passed|tests failed" "$OUT_DIR/ctest.log" | head -60
fi

if [[ $BENCH == 1 && -n $DATA ]]; then
  args=("$OUT_DIR/cuda-benchmarks.jsonl" --device cuda --data "$DATA" --epochs "$EPOCHS" --no-build)
  [[ -n $CONFIGS ]] && args+=(--configs "$CONFIGS")
  BUILD_DIR="$BUILD_DIR" "$ROOT/scripts/run_benchmarks.sh" "${args[@]}" 2>"$OUT_DIR/bench.log" | tee "$OUT_DIR/bench-summary.txt" \
    || status=1
fi
exit $status
