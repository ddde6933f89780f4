#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/optim/fixtures/sgd_torch.json for tests/optim/sgd_test.cc.

PyTorch's own SGD (Debian's python3-torch 1.13, torch.optim.SGD with
foreach=False, fp32 tensors) runs a few configurations over the same fixed
fp32 parameters and gradients, with the learning rate changed every step as a
schedule does, and two parameter groups: the first NO_DECAY elements without
weight decay (the model's no-decay ranges), the rest with it. The file holds
the inputs and, per configuration, the final parameters and momentum buffer.
Values are the exact fp32 numbers written as JSON doubles. Run from the
repository root:
  /usr/bin/python3 tools/make_sgd_fixture.py   (Debian python, not a pyenv one)
The test suite only reads the committed file; it never needs torch.
"""
import json
import os

import torch

N, NO_DECAY, STEPS, SEED = 53, 20, 15, 2024
CONFIGS = [
    {"name": "momentum", "momentum": 0.9, "weight_decay": 0.01, "nesterov": False},
    {"name": "nesterov", "momentum": 0.9, "weight_decay": 0.01, "nesterov": True},
    {"name": "momentum_no_decay", "momentum": 0.5, "weight_decay": 0.0, "nesterov": False},
]
OUT = os.path.join("tests", "optim", "fixtures", "sgd_torch.json")


def lr_at(t):
    return 0.05 * (1.0 - 0.03 * t)


def main():
    gen = torch.Generator().manual_seed(SEED)
    params0 = torch.randn(N, generator=gen, dtype=torch.float32)
    grads = [torch.randn(N, generator=gen, dtype=torch.float32) * 0.5 for _ in range(STEPS)]
    results = []
    for c in CONFIGS:
        a = params0[:NO_DECAY].clone().requires_grad_(True)
        b = params0[NO_DECAY:].clone().requires_grad_(True)
        opt = torch.optim.SGD(
            [{"params": [a], "weight_decay": 0.0}, {"params": [b], "weight_decay": c["weight_decay"]}],
            lr=lr_at(0), momentum=c["momentum"], nesterov=c["nesterov"], foreach=False)
        for t in range(STEPS):
            for group in opt.param_groups:
                group["lr"] = lr_at(t)
            a.grad = grads[t][:NO_DECAY].clone()
            b.grad = grads[t][NO_DECAY:].clone()
            opt.step()
        params = torch.cat([a.detach(), b.detach()])
        buf = torch.cat([opt.state[a]["momentum_buffer"], opt.state[b]["momentum_buffer"]])
        results.append(dict(c, params=[float(x) for x in params.tolist()],
                            momentum_buffer=[float(x) for x in buf.tolist()]))
    doc = {
        "source": "torch.optim.SGD, torch " + torch.__version__ + ", fp32, foreach=False",
        "n": N, "no_decay": NO_DECAY, "steps": STEPS,
        "lr": [lr_at(t) for t in range(STEPS)],
        "params0": [float(x) for x in params0.tolist()],
        "grads": [[float(x) for x in g.tolist()] for g in grads],
        "configs": results,
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
