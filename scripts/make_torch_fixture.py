#!/usr/bin/python3
"""Writes the PyTorch reference fixtures that native/tests/test_pytorch_fixture.cpp checks the engine against.

Run with Debian's torch: /usr/bin/python3 scripts/make_torch_fixture.py

For each small network below: seeded weights and inputs (rounded to float32, so the engine sees exactly
the same numbers), then in float64 the head's outputs, the mean loss and every parameter gradient.
Conventions are engine.h's: dense weight (units, inputs), conv weight (filters, C, kh, kw), flatten in
C,H,W order, tensors layers.<i>.weight/bias with <i> the index in spec.layers; 'same' padding puts the
odd extra pixel bottom/right (TF; PyTorch padding='same' for stride 1); a trailing softmax (sigmoid) is
folded into softmax_cross_entropy (binary_cross_entropy), and outputs are the logits before the loss.

The forward pass is written directly with torch.nn.functional from the spec; as a cross-check, the
model that scripts/bench_pytorch.py builds from the same spec must give the same outputs.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "native", "tests", "fixtures")

FIXTURES = [
    {
        "name": "torch_cnn",
        "description": "conv 2x2 same relu (even kernel: pad bottom/right), conv 3x3 stride 2 valid tanh, "
                       "maxpool 2 stride 1, avgpool 2 stride 1, flatten, dense 6 sigmoid, dense 3; softmax CE",
        "batch": 4,
        "spec": {
            "input": [2, 9, 9],
            "layers": [
                {"kind": "conv2d", "filters": 3, "kernel": [2, 2], "stride": 1, "padding": "same", "activation": "relu"},
                {"kind": "conv2d", "filters": 4, "kernel": [3, 3], "stride": 2, "padding": "valid", "activation": "tanh"},
                {"kind": "maxpool2d", "size": 2, "stride": 1},
                {"kind": "avgpool2d", "size": 2, "stride": 1},
                {"kind": "flatten"},
                {"kind": "dense", "units": 6, "activation": "sigmoid"},
                {"kind": "dense", "units": 3},
            ],
            "loss": "softmax_cross_entropy",
            "optimizer": {"kind": "adam", "lr": 0.001},
            "seed": 0,
        },
    },
    {
        "name": "torch_bce",
        "description": "dense 5 leaky_relu(0.1), dropout (inactive), dense 4, softplus layer, dense 1 sigmoid "
                       "(folded into the loss); binary_cross_entropy on labels 0/1",
        "batch": 5,
        "spec": {
            "input": [7],
            "layers": [
                {"kind": "dense", "units": 5, "activation": "leaky_relu", "alpha": 0.1},
                {"kind": "dropout", "rate": 0.3},
                {"kind": "dense", "units": 4},
                {"kind": "activation", "fn": "softplus"},
                {"kind": "dense", "units": 1, "activation": "sigmoid"},
            ],
            "loss": "binary_cross_entropy",
            "optimizer": {"kind": "sgd", "lr": 0.1},
            "seed": 0,
        },
    },
    {
        "name": "torch_mse",
        "description": "conv 3x3 full sigmoid, avgpool 2, conv 3x3 stride 2 same leaky_relu (pad bottom/right), "
                       "flatten, dense 3 tanh; mse against the one-hot label",
        "batch": 3,
        "spec": {
            "input": [1, 6, 6],
            "layers": [
                {"kind": "conv2d", "filters": 2, "kernel": [3, 3], "stride": 1, "padding": "full", "activation": "sigmoid"},
                {"kind": "avgpool2d", "size": 2},
                {"kind": "conv2d", "filters": 3, "kernel": [3, 3], "stride": 2, "padding": "same",
                 "activation": "leaky_relu", "alpha": 0.2},
                {"kind": "flatten"},
                {"kind": "dense", "units": 3, "activation": "tanh"},
            ],
            "loss": "mse",
            "optimizer": {"kind": "sgd", "lr": 0.1, "momentum": 0.9},
            "seed": 0,
        },
    },
    {
        "name": "torch_mae_softmax",
        "description": "dense 4 tanh, dense 3, softmax layer (not folded: mae sees probabilities); mae against "
                       "the one-hot label",
        "batch": 4,
        "spec": {
            "input": [5],
            "layers": [
                {"kind": "dense", "units": 4, "activation": "tanh"},
                {"kind": "dense", "units": 3},
                {"kind": "activation", "fn": "softmax"},
            ],
            "loss": "mae",
            "optimizer": {"kind": "adam", "lr": 0.01},
            "seed": 0,
        },
    },
]


# ---- forward with torch.nn.functional, straight from the spec ----
def activate(x, fn, alpha):
    return {
        "linear": lambda: x, "relu": lambda: F.relu(x), "leaky_relu": lambda: F.leaky_relu(x, alpha),
        "sigmoid": lambda: torch.sigmoid(x), "tanh": lambda: torch.tanh(x), "softplus": lambda: F.softplus(x),
        "softmax": lambda: torch.softmax(x, dim=1),
    }[fn]()


def conv_padding(size, kernel, stride, padding):
    """(before, after) zero padding along one axis."""
    if padding == "valid":
        return 0, 0
    if padding == "full":
        return kernel - 1, kernel - 1
    out = -(-size // stride)  # same: ceil(size / stride)
    total = max((out - 1) * stride + kernel - size, 0)
    return total // 2, total - total // 2


def forward(spec, params, x):
    """Returns the head's outputs before the loss (a folded trailing softmax/sigmoid left out)."""
    fused = {"softmax_cross_entropy": "softmax", "binary_cross_entropy": "sigmoid"}.get(spec["loss"])
    layers = spec["layers"]
    for i, layer in enumerate(layers):
        kind, last = layer["kind"], i == len(layers) - 1
        fn = layer.get("fn", "linear") if kind == "activation" else layer.get("activation", "linear")
        if kind == "conv2d":
            kh, kw = layer["kernel"]
            stride = layer.get("stride", 1)
            top, bottom = conv_padding(x.shape[2], kh, stride, layer.get("padding", "valid"))
            left, right = conv_padding(x.shape[3], kw, stride, layer.get("padding", "valid"))
            x = F.conv2d(F.pad(x, (left, right, top, bottom)), params[f"layers.{i}.weight"],
                         params[f"layers.{i}.bias"], stride=stride)
        elif kind == "dense":
            x = F.linear(x.reshape(x.shape[0], -1), params[f"layers.{i}.weight"], params[f"layers.{i}.bias"])
        elif kind == "maxpool2d":
            x = F.max_pool2d(x, layer["size"], layer.get("stride", layer["size"]))
        elif kind == "avgpool2d":
            x = F.avg_pool2d(x, layer["size"], layer.get("stride", layer["size"]))
        elif kind == "flatten":
            x = x.reshape(x.shape[0], -1)
        elif kind == "dropout":
            pass  # the test runs with training=false
        if kind in ("conv2d", "dense", "activation") and not (last and fn == fused):
            x = activate(x, fn, layer.get("alpha", 0.01))
    return x


def mean_loss(loss, outputs, labels):
    if loss == "softmax_cross_entropy":
        return F.cross_entropy(outputs, labels)
    target = labels.double().unsqueeze(1) if outputs.shape[1] == 1 else F.one_hot(labels, outputs.shape[1]).double()
    if loss == "binary_cross_entropy":
        return F.binary_cross_entropy_with_logits(outputs, target)
    return F.mse_loss(outputs, target) if loss == "mse" else F.l1_loss(outputs, target)


# ---- parameters and data ----
def parameter_shapes(spec):
    """(name, shape) in spec order, weight before bias, as nnstudio::parameterTable."""
    shapes, shape = [], list(spec["input"])
    probe = torch.zeros(1, *shape, dtype=torch.float64)
    for i, layer in enumerate(spec["layers"]):
        if layer["kind"] == "conv2d":
            shapes += [(f"layers.{i}.weight", [layer["filters"], shape[0]] + list(layer["kernel"])),
                       (f"layers.{i}.bias", [layer["filters"]])]
        elif layer["kind"] == "dense":
            shapes += [(f"layers.{i}.weight", [layer["units"], math.prod(shape)]), (f"layers.{i}.bias", [layer["units"]])]
        params = {name: torch.zeros(s, dtype=torch.float64) for name, s in shapes}
        sub = dict(spec, layers=spec["layers"][: i + 1], loss="mse")  # nothing folded while probing
        shape = list(forward(sub, params, probe).shape[1:])
    return shapes


def float32_uniform(generator, shape, limit):
    """Uniform(-limit, limit), rounded to float32 and held in float64."""
    return (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1).mul(limit).float().double()


def tensor_json(t):
    return {"shape": list(t.shape), "data": [float(v) for v in t.reshape(-1).tolist()]}


def make(fixture, seed):
    spec, batch = fixture["spec"], fixture["batch"]
    generator = torch.Generator().manual_seed(seed)
    params = {}
    for name, shape in parameter_shapes(spec):
        fan_in = math.prod(shape[1:]) if name.endswith("weight") else 1
        limit = math.sqrt(3.0 / fan_in) if name.endswith("weight") else 0.2  # nonzero biases on purpose
        params[name] = float32_uniform(generator, shape, limit).requires_grad_(True)
    inputs = float32_uniform(generator, [batch] + list(spec["input"]), 1.0)
    classes = forward(spec, params, inputs).shape[1]
    labels = torch.randint(0, max(classes, 2), (batch,), generator=generator)

    outputs = forward(spec, params, inputs)
    loss = mean_loss(spec["loss"], outputs, labels)
    loss.backward()
    check_against_bench_model(spec, params, inputs, outputs)
    return {
        "name": fixture["name"],
        "description": fixture["description"],
        "generator": f"scripts/make_torch_fixture.py (torch {torch.__version__}, float64, seed {seed})",
        "spec": spec,
        "parameters": {name: tensor_json(p.detach()) for name, p in params.items()},
        "inputs": tensor_json(inputs),
        "labels": labels.tolist(),
        "logits": tensor_json(outputs.detach()),
        "loss": float(loss),
        "gradients": {name: tensor_json(p.grad) for name, p in params.items()},
    }


def check_against_bench_model(spec, params, inputs, outputs):
    """The nn.Sequential that bench_pytorch.py builds must compute the same outputs."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_pytorch import build_model

    model, inits = build_model(spec)
    model = model.double().eval()
    param_layers = [i for i, layer in enumerate(spec["layers"]) if layer["kind"] in ("dense", "conv2d")]
    with torch.no_grad():
        for (module, *_), i in zip(inits, param_layers):
            module.weight.copy_(params[f"layers.{i}.weight"])
            module.bias.copy_(params[f"layers.{i}.bias"])
        difference = (model(inputs) - outputs).abs().max().item()
    if difference > 1e-12:
        raise SystemExit(f"bench_pytorch.build_model disagrees with the fixture's forward: {difference:.3g}")


def main():
    torch.set_default_dtype(torch.float64)
    os.makedirs(OUT_DIR, exist_ok=True)
    for seed, fixture in enumerate(FIXTURES):
        data = make(fixture, seed)
        path = os.path.join(OUT_DIR, fixture["name"] + ".json")
        with open(path, "w") as f:  # one top-level member per line
            f.write("{\n" + ",\n".join(f" {json.dumps(k)}: {json.dumps(v)}" for k, v in data.items()) + "\n}\n")
        print(f"wrote {os.path.relpath(path, ROOT)}: loss {data['loss']:.6f}, {len(data['gradients'])} gradient tensors")


if __name__ == "__main__":
    main()
