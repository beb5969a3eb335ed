"""A preset's training recipe in PyTorch, for scripts/bench_pytorch.py: the optimizer (Adam, AdamW, SGD with
momentum or Nesterov), the loss (label smoothing), the one-cycle schedule, augmentation on the device and
the weight average (EMA), each as the engine defines it, and each usable inside a captured CUDA graph.
"""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from torch_model import decay_groups


def make_loss(spec, classes):
    loss = spec["loss"]
    if loss == "softmax_cross_entropy":
        return nn.CrossEntropyLoss(label_smoothing=spec.get("labelSmoothing", 0.0))

    def target(labels, dtype):
        if classes == 1:
            return labels.to(dtype).unsqueeze(1)
        return F.one_hot(labels, classes).to(dtype)

    base = {"binary_cross_entropy": nn.BCEWithLogitsLoss(), "mse": nn.MSELoss(), "mae": nn.L1Loss()}[loss]
    return lambda outputs, labels: base(outputs, target(labels, outputs.dtype))


def make_optimizer(spec, model, capturable, fused=False):
    """capturable: the learning rate becomes a tensor on the device, so a schedule can change it between
    replays of a captured step (set_lr)."""
    opt = spec["optimizer"]
    lr = torch.tensor(opt["lr"], device="cuda") if capturable else opt["lr"]
    extra = {"fused": True} if fused else {}
    if opt["kind"] == "sgd":
        # decoupledWeightDecay has no torch.optim equivalent; the bench's presets don't use it
        groups = decay_groups(model, opt.get("weightDecay", 0.0))
        return torch.optim.SGD(groups, lr=opt["lr"], momentum=opt.get("momentum", 0.0),
                               nesterov=opt.get("nesterov", False), **extra)
    if capturable:
        extra["capturable"] = True
    betas, eps = (opt.get("beta1", 0.9), opt.get("beta2", 0.999)), opt.get("eps", 1e-7)
    groups = decay_groups(model, opt.get("weightDecay", 0.0))
    optimizer = torch.optim.AdamW if opt["kind"] == "adamw" else torch.optim.Adam
    return optimizer(groups, lr=lr, betas=betas, eps=eps, **extra)


def set_lr(optimizer, value):
    for group in optimizer.param_groups:
        if torch.is_tensor(group["lr"]):
            group["lr"].fill_(value)
        else:
            group["lr"] = value


def one_cycle(schedule, base_lr, total_steps):
    """lr(step) for step 0..total_steps-1: PyTorch's OneCycleLR with cosine annealing, momentum not cycled,
    as the engine's; None for a constant rate."""
    if not schedule or schedule.get("kind", "constant") == "constant":
        return None
    if schedule["kind"] != "onecycle":
        raise ValueError(f"the bench knows lrSchedule kinds constant and onecycle, got {schedule['kind']}")
    peak = schedule.get("maxLr") or base_lr
    initial = peak / schedule.get("divFactor", 25.0)
    final = initial / schedule.get("finalDivFactor", 1e4)
    rise_end = float(schedule.get("pctStart", 0.3) * total_steps) - 1

    def cos(start, end, pct):
        if schedule.get("anneal") == "linear":
            return (end - start) * pct + start
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    def lr(step):
        if step <= rise_end:
            return cos(initial, peak, step / rise_end if rise_end > 0 else 1.0)
        return cos(peak, final, (step - rise_end) / max(total_steps - 1 - rise_end, 1e-9))

    return lr


def make_augment(augment):
    """x -> augmented x on the device (random ints and draws from the device generator, so it can be captured in
    a CUDA graph); translation pads with zeros and crops back at a random offset, like the engine."""
    if not augment:
        return None
    unsupported = [k for k in ("rotate", "scale", "erase") if augment.get(k)]
    if unsupported:
        raise ValueError(f"the PyTorch bench does not mirror augment {', '.join(unsupported)}")
    shift, flip = int(augment.get("translate", 0)), bool(augment.get("flip", False))

    def apply(x):
        if shift > 0:
            batch, channels, height, width = x.shape
            padded = F.pad(x, (shift, shift, shift, shift))
            dy = torch.randint(0, 2 * shift + 1, (batch, 1, 1, 1), device=x.device)
            dx = torch.randint(0, 2 * shift + 1, (batch, 1, 1, 1), device=x.device)
            rows = (dy + torch.arange(height, device=x.device).view(1, 1, height, 1)).expand(batch, channels, height, width + 2 * shift)
            x = padded.gather(2, rows)
            cols = (dx + torch.arange(width, device=x.device).view(1, 1, 1, width)).expand(batch, channels, height, width)
            x = x.gather(3, cols)
        if flip:
            mirrored = torch.rand(x.shape[0], 1, 1, 1, device=x.device) < 0.5
            x = torch.where(mirrored, x.flip(3), x)
        return x

    return apply


class WeightAverage:
    """avg = decay * avg + (1 - decay) * w after every step, over the parameters and the batchnorm statistics
    (the engine keeps both in its weights); `model` evaluates with the average."""

    def __init__(self, model, decay):
        self.decay = decay
        self.model = copy.deepcopy(model)
        self.averaged = [t for t in list(self.model.parameters()) + list(self.model.buffers()) if t.is_floating_point()]
        self.live = [t for t in list(model.parameters()) + list(model.buffers()) if t.is_floating_point()]

    @torch.no_grad()
    def update(self):
        torch._foreach_lerp_(self.averaged, self.live, 1.0 - self.decay)

    @torch.no_grad()
    def reset(self):
        for average, live in zip(self.averaged, self.live):
            average.copy_(live)
