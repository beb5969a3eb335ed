#!/usr/bin/env python3
"""Multiply-adds of one image through each preset (forward), and the training FLOPs of an MNIST epoch:
2 FLOPs a multiply-add, 3 passes (forward, input gradient, weight gradient; the first layer's input gradient
is left out), 60 000 images. The roofline column of docs/BENCHMARKS.md divides these by the measured seconds.

Usage: python3 scripts/preset_flops.py [--presets DIR] [names...]
"""
import argparse
import json
import math
import os


def out_size(size, kernel, stride, padding):
    if padding == "same":
        return math.ceil(size / stride)
    if padding == "full":
        return (size + kernel - 2) // stride + 1
    return (size - kernel) // stride + 1


def walk(layers, shape, macs, first):
    """shape (C, H, W) or (n,); appends (forward MACs, has input gradient) per layer with weights."""
    for layer in layers:
        kind = layer["kind"]
        if kind == "conv2d":
            c, h, w = shape
            kh, kw = layer["kernel"]
            stride = layer.get("stride", 1)
            oh, ow = out_size(h, kh, stride, layer.get("padding", "valid")), out_size(w, kw, stride, layer.get("padding", "valid"))
            macs.append((oh * ow * layer["filters"] * c * kh * kw, not first[0]))
            first[0] = False
            shape = (layer["filters"], oh, ow)
        elif kind in ("maxpool2d", "avgpool2d"):
            c, h, w = shape
            size, stride = layer["size"], layer.get("stride", layer["size"])
            shape = (c, (h - size) // stride + 1, (w - size) // stride + 1)
        elif kind == "global_avgpool":
            shape = (shape[0],)
        elif kind == "flatten":
            shape = (math.prod(shape),)
        elif kind == "dense":
            n = math.prod(shape)
            macs.append((n * layer["units"], not first[0]))
            first[0] = False
            shape = (layer["units"],)
        elif kind == "residual":
            start = shape
            shape = walk(layer["layers"], shape, macs, first)
            if start != shape:  # the 1x1 projection of the shortcut
                c, h, w = start
                macs.append((shape[1] * shape[2] * shape[0] * c, True))
    return shape


def training_flops(spec, images=60000):
    macs = []
    walk(spec["layers"], tuple(spec["input"]), macs, [True])
    forward = sum(m for m, _ in macs)
    passes = sum(m * (3 if grad else 2) for m, grad in macs)
    return forward, 2 * passes * images


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--presets", default=os.path.join(os.path.dirname(__file__), "..", "resources", "presets"))
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    names = args.names or sorted(f[:-5] for f in os.listdir(args.presets) if f.endswith(".json"))
    for name in names:
        spec = json.load(open(os.path.join(args.presets, name + ".json")))["spec"]
        forward, flops = training_flops(spec)
        print(f"{name}\t{forward / 1e6:.3f} M multiply-adds an image\t{flops / 1e12:.3f} TFLOP an epoch")


if __name__ == "__main__":
    main()
