#!/usr/bin/env bash
# Several GPUs on one machine (issue 17), for the device tool's several-GPU kinds: builds the engine with
# plain CMake, runs test_cuda_data_parallel, then per preset nnstudio_bench on 1 GPU and on every count of
# --counts (data-parallel), and PyTorch DDP (scripts/bench_ddp.py) on the same counts, side by side in one
# call. NCCL: libnccl.so.2 from the system, else the one PyTorch's wheel brings (nvidia/nccl/lib).
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0), as the device tool's notes require.
#
# usage: scripts/gpu_multi.sh OUT_DIR [--data DIR] [--configs a,b] [--counts 2,4] [--epochs N]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${1:?usage: scripts/gpu_multi.sh OUT_DIR [--data DIR] [--configs a,b] [--counts 2,4] [--epochs N]}"
shift
DATA="$ROOT/.gpu/mnist" CONFIGS="resnet_fast,resnet_mnist,mlp,seed001,keras_cnn" COUNTS="2" EPOCHS=3
while [[ $# -gt 0 ]]; do
  case "$1" in
    --data) DATA="$2"; shift 2 ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --counts) COUNTS="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    *) echo "gpu_multi: unknown argument $1" >&2; exit 2 ;;
  esac
done
export NCCL_NVLS_ENABLE=0
# a hung collective must not eat the session: every run has a time limit, and NCCL says what went wrong
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
mkdir -p "$OUT_DIR"
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader | tee "$OUT_DIR/gpus.txt"
if [[ -z ${NNSTUDIO_NCCL_LIBRARY:-} ]] && ! ldconfig -p | grep -q libnccl.so.2; then
  wheel=$(python3 -c "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib', 'libnccl.so.2'))" 2>/dev/null)
  [[ -f $wheel ]] && export NNSTUDIO_NCCL_LIBRARY="$wheel"
fi
echo "NCCL: ${NNSTUDIO_NCCL_LIBRARY:-libnccl.so.2 from the system}"
ARCH=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
start=$(date +%s)
cmake -S "$ROOT/native" -B "$ROOT/build/gpu" -DCMAKE_BUILD_TYPE=Release -DNNSTUDIO_CUDA_ARCHITECTURES="$ARCH" >"$OUT_DIR/build.log" 2>&1 &&
  cmake --build "$ROOT/build/gpu" -j "$(nproc)" --target test_cuda_data_parallel nnstudio_bench >>"$OUT_DIR/build.log" 2>&1 ||
  { tail -40 "$OUT_DIR/build.log"; exit 1; }
echo "build: $(( $(date +%s) - start )) s"
timeout 240 "$ROOT/build/gpu/test_cuda_data_parallel" >"$OUT_DIR/test_cuda_data_parallel.log" 2>&1; echo "test_cuda_data_parallel rc $? (124: timed out)"
grep -E "FAIL|skipped|passed, " "$OUT_DIR/test_cuda_data_parallel.log"
IFS=',' read -ra configs <<<"$CONFIGS"
IFS=',' read -ra counts <<<"$COUNTS"
for config in "${configs[@]}"; do
  timeout 120 "$ROOT/build/gpu/nnstudio_bench" --device cuda --data "$DATA" --configs "$config" --epochs "$EPOCHS" >>"$OUT_DIR/bench.jsonl" 2>>"$OUT_DIR/bench.log"
  for n in "${counts[@]}"; do
    list=$(seq -s, 0 $((n - 1)))
    timeout 120 "$ROOT/build/gpu/nnstudio_bench" --device cuda --data "$DATA" --configs "$config" --epochs "$EPOCHS" --gpus "$list" \
      >>"$OUT_DIR/bench.jsonl" 2>>"$OUT_DIR/bench.log"
  done
  timeout 180 python3 "$ROOT/scripts/bench_ddp.py" --device cuda --data "$DATA" --configs "$config" --epochs "$EPOCHS" --gpus "1,$COUNTS" \
    >>"$OUT_DIR/bench.jsonl" 2>>"$OUT_DIR/ddp.log"
  echo "$config: $(( $(date +%s) - start )) s"
done
python3 - "$OUT_DIR/bench.jsonl" <<'PY'
import json, sys
# NCCL writes its version line to standard output too
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
one = {(r["framework"], r["config"]): r["secondsPerEpoch"] for r in rows if r.get("gpus", 1) == 1}
print("| config | who | GPUs | s/epoch | images/s | scaling vs 1 GPU | test acc |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    base = one.get((r["framework"], r["config"]))
    scale = f"{base / r['secondsPerEpoch']:.2f}x" if base else "—"
    print(f"| {r['config']} | {r['framework']} {r.get('mode', '')} | {r.get('gpus', 1)} | {r['secondsPerEpoch']:.3f} | "
          f"{r.get('imagesPerSecond', 0):.0f} | {scale} | {100 * r['testAccuracyN']:.2f} |")
PY
