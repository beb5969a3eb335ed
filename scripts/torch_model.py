"""An NN Studio model spec (resources/presets/*.json "spec") as a torch.nn module, for scripts/bench_pytorch.py.

Every layer kind of the engine that the presets use: dense, conv2d (valid/same/full, TF-style 'same' for
strides > 1), max/avg pooling, flatten, dropout, activation layers and fused activations (GELU in its exact
erf form, as the engine), batchnorm (over channels or features, PyTorch's momentum convention, as the
engine), global_avgpool and residual blocks (identity shortcut when the block keeps the shape, else a 1x1
convolution with the block's stride, or a dense projection on flat inputs, as the engine).
"""
import math
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

RELU_FAMILY = ("relu", "leaky_relu")
# PyTorch pads a copy of the input for even kernels with padding='same'; that cost is part of its figures.
warnings.filterwarnings("ignore", message="Using padding='same' with even kernel")


def activation_module(fn, alpha=0.01):
    return {
        "linear": None, "relu": nn.ReLU(), "leaky_relu": nn.LeakyReLU(alpha), "sigmoid": nn.Sigmoid(),
        "tanh": nn.Tanh(), "softplus": nn.Softplus(), "softmax": nn.Softmax(dim=1), "gelu": nn.GELU(),
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


class Residual(nn.Module):
    """body(x) + shortcut(x); the shortcut is the identity or a projection."""

    def __init__(self, body, shortcut):
        super().__init__()
        self.body, self.shortcut = body, shortcut

    def forward(self, x):
        return self.body(x) + self.shortcut(x)


def output_shape(modules, shape):
    with torch.no_grad():
        return list(nn.Sequential(*modules)(torch.zeros(1, *shape)).shape[1:]) if modules else list(shape)


def conv_modules(layer, shape):
    kh, kw = layer["kernel"]
    stride, padding = layer.get("stride", 1), layer.get("padding", "valid")
    modules = []
    if padding == "same" and stride > 1:
        modules.append(PadSame((kh, kw), stride))
        torch_padding = 0
    else:
        torch_padding = {"valid": 0, "same": "same", "full": (kh - 1, kw - 1)}[padding]
    conv = nn.Conv2d(shape[0], layer["filters"], (kh, kw), stride=stride, padding=torch_padding)
    return modules + [conv], conv, shape[0] * kh * kw, layer["filters"] * kh * kw


def batchnorm_module(layer, shape):
    norm = nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d
    return norm(shape[0], eps=layer.get("eps", 1e-5), momentum=layer.get("momentum", 0.1), affine=layer.get("affine", True))


def projection(shape_in, shape_out):
    """The residual block's shortcut: None (identity) when the shapes agree."""
    if shape_in == shape_out:
        return None
    if len(shape_in) == 3:
        stride = shape_in[1] // shape_out[1]
        return nn.Conv2d(shape_in[0], shape_out[0], 1, stride=stride)
    return nn.Linear(math.prod(shape_in), shape_out[0])


def build_layers(specs, shape, fused, inits, top_level):
    """torch modules for a list of spec layers starting from `shape`; appends [module, act, fan_in, fan_out]
    to `inits`; returns (modules, output shape)."""
    modules = []
    for index, layer in enumerate(specs):
        first_new = len(modules)
        kind = layer["kind"]
        act = layer.get("fn", "linear") if kind == "activation" else layer.get("activation", "linear")
        if kind == "conv2d":
            built, conv, fan_in, fan_out = conv_modules(layer, shape)
            modules += built
            inits.append([conv, act, fan_in, fan_out])
        elif kind == "dense":
            inputs = math.prod(shape)
            if len(shape) != 1:
                modules.append(nn.Flatten())
            dense = nn.Linear(inputs, layer["units"])
            modules.append(dense)
            inits.append([dense, act, inputs, layer["units"]])
        elif kind in ("maxpool2d", "avgpool2d"):
            pool = nn.MaxPool2d if kind == "maxpool2d" else nn.AvgPool2d
            modules.append(pool(layer["size"], stride=layer.get("stride", layer["size"])))
        elif kind == "flatten":
            modules.append(nn.Flatten())
        elif kind == "dropout":
            modules.append(nn.Dropout(layer["rate"]))
        elif kind == "batchnorm":
            modules.append(batchnorm_module(layer, shape))
        elif kind == "global_avgpool":
            modules += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        elif kind == "residual":
            body, body_shape = build_layers(layer["layers"], shape, fused, inits, top_level=False)
            shortcut = projection(shape, body_shape)
            if shortcut is not None:
                inits.append([shortcut, "linear", shape[0], body_shape[0]])
            modules.append(Residual(nn.Sequential(*body), shortcut or nn.Identity()))
        elif kind == "activation":
            # an activation layer right after a linear dense/conv picks that layer's init family
            previous = specs[index - 1] if index > 0 else {}
            if inits and previous.get("kind") in ("dense", "conv2d") and previous.get("activation", "linear") == "linear":
                inits[-1][1] = act
        else:
            raise ValueError(f"layer #{index + 1}: unknown kind {kind}")
        is_last = top_level and index == len(specs) - 1
        if kind in ("conv2d", "dense", "activation") and act != "linear" and not (is_last and act == fused):
            modules.append(activation_module(act, layer.get("alpha", 0.01)))
        shape = output_shape(modules[first_new:], shape)
    return modules, shape


def build_model(spec):
    """Returns (nn.Sequential, [[module, activation, fan_in, fan_out], ...]); a trailing softmax (sigmoid)
    is left to CrossEntropyLoss (BCEWithLogitsLoss), as the engine folds it into the loss."""
    fused = {"softmax_cross_entropy": "softmax", "binary_cross_entropy": "sigmoid"}.get(spec["loss"])
    inits = []
    modules, _ = build_layers(spec["layers"], list(spec["input"]), fused, inits, top_level=True)
    return nn.Sequential(*modules), inits


def engine_init(inits, seed):
    """He-uniform for the ReLU family, Glorot-uniform otherwise, zero biases (the engine's scheme)."""
    generator = torch.Generator().manual_seed(seed)
    for module, act, fan_in, fan_out in inits:
        limit = math.sqrt(6.0 / fan_in) if act in RELU_FAMILY else math.sqrt(6.0 / (fan_in + fan_out))
        with torch.no_grad():
            module.weight.copy_(torch.empty(module.weight.shape).uniform_(-limit, limit, generator=generator))
            module.bias.zero_()


def decay_groups(model, weight_decay):
    """The engine decays dense and convolution weights only (not biases, not batchnorm's parameters)."""
    decayed, plain = [], []
    for module in model.modules():
        for name, parameter in module.named_parameters(recurse=False):
            is_weight = name == "weight" and isinstance(module, (nn.Linear, nn.Conv2d))
            (decayed if is_weight else plain).append(parameter)
    return [{"params": decayed, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]
