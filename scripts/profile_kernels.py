#!/usr/bin/env python3
"""Per-kernel timings of one training step on the GPU, through Nsight Compute (ncu).

Runs nnstudio_bench for each config under ncu, which times every kernel node of the captured step
(gpu__time_duration, clocks and caches left as they are), finds the step's repeating sequence of kernels, and
prints, per config, each kernel's median time over the profiled steps, their sum, and the measured
time per step (seconds per epoch / steps) so that the gap (launch latency between graph nodes) shows.

usage: scripts/profile_kernels.py --bench build/gpu/nnstudio_bench --data DIR [--configs a,b] [--precision mixed]
                                  [--out FILE]
"""
import argparse
import csv
import io
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORDER = ["seed000", "seed001", "seed001_256", "seed002", "mlp", "keras_cnn", "lenet5"]


def period(names):
    """Smallest p with names[i] == names[i + p] for every i: the kernels of one step."""
    for p in range(1, len(names) // 2 + 1):
        if all(names[i] == names[i + p] for i in range(len(names) - p)):
            return p
    return len(names)


def profile(args, config):
    cmd = ["ncu", "--clock-control", "none", "--cache-control", "none", "--metrics", "gpu__time_duration.sum", "--csv", "--print-units", "base",
           "--print-kernel-base", "function", "--launch-skip", str(args.skip), "--launch-count", str(args.count),
           args.bench, "--data", args.data, "--presets", os.path.join(ROOT, "resources", "presets"), "--device", "cuda",
           "--configs", config, "--epochs", "1", "--precision", args.precision]
    run = subprocess.run(cmd, capture_output=True, text=True)
    rows = [r for r in csv.reader(io.StringIO(run.stdout)) if len(r) > 10 and not r[0].startswith("{")]
    if not rows:
        raise RuntimeError(f"ncu gave no rows for {config}: {run.stderr[-2000:]}")
    header, rows = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    kernels = []
    for r in rows:
        if r[col["Metric Name"]] != "gpu__time_duration.sum":
            continue
        unit = r[col["Metric Unit"]]
        value = float(r[col["Metric Value"]].replace(",", ""))
        ns = value * {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}.get(unit, 1)
        kernels.append((r[col["Kernel Name"]], r[col["Grid Size"]], r[col["Block Size"]], ns / 1e3))
    bench = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    return kernels, bench


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bench", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--configs", default=",".join(ORDER))
    parser.add_argument("--precision", default="fp32", choices=["fp32", "tf32", "mixed"],
                        help="the tensor-core products' arithmetic (nnstudio_bench's --precision)")
    parser.add_argument("--skip", type=int, default=300, help="kernels to let run before profiling")
    parser.add_argument("--count", type=int, default=150, help="kernels to profile")
    parser.add_argument("--step-seconds", help="JSON lines of nnstudio_bench results, for the measured step time")
    parser.add_argument("--out", help="also write the report here")
    args = parser.parse_args()

    measured = {}
    if args.step_seconds:
        presets = os.path.join(ROOT, "resources", "presets")
        for line in open(args.step_seconds):
            record = json.loads(line)
            if record.get("framework") == "nnstudio":
                batch = record["batchSize"]
                measured[record["config"]] = record["secondsPerEpoch"] / -(-60000 // batch) * 1e6

    out = []
    for config in args.configs.split(","):
        kernels, _ = profile(args, config)
        names = [k[0] for k in kernels]
        p = period(names)
        steps = len(kernels) // p
        out.append(f"\n### {config}: {p} kernels per step, median of {steps} steps (µs)")
        out.append("| # | kernel | grid | block | µs |")
        out.append("|---|---|---|---|---|")
        total = 0.0
        for i in range(p):
            times = [kernels[i + s * p][3] for s in range(steps)]
            median = statistics.median(times)
            total += median
            name, grid, block, _ = kernels[i]
            out.append(f"| {i + 1} | `{name}` | {grid} | {block} | {median:.1f} |")
        line = f"| | **sum of kernels** | | | **{total:.1f}** |"
        out.append(line)
        if config in measured:
            out.append(f"| | measured step (s/epoch ÷ steps) | | | {measured[config]:.1f} |")
        print("\n".join(out[-(p + 5):]), flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    sys.exit(main())
