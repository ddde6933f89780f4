#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the reference fixture for tests/model/fixture_test.cc.

An independent GPT-2 implementation in PyTorch (Debian's python3-torch,
computed in float64 from fp32 weights) runs a small GPT on fixed tokens and
writes:
  tests/model/fixtures/gpt_fixture_model.bin  llm.c model file (fp32, version 3)
  tests/model/fixtures/gpt_fixture_state.bin  debug state: tokens, targets,
      logits [B,T,Vp], loss, and every parameter gradient (llm.c order)
Formats: src/model/llmc_io.h. Run from the repository root:
  /usr/bin/python3 tools/make_gpt_fixture.py   (Debian python, not a pyenv one)
The test suite only reads the committed files; it never needs torch.
"""
import math
import os
import struct

import torch
import torch.nn.functional as F

# Small, odd shapes on purpose: V is not a multiple of anything, T < maxT.
MAX_T, V, VP, L, NH, C = 12, 37, 48, 2, 2, 16
B, T = 2, 9
SEED = 1234
OUT_DIR = os.path.join("tests", "model", "fixtures")

# llm.c file order; shapes per layer for the stacked tensors.
TENSORS = [
    ("wte", (VP, C)), ("wpe", (MAX_T, C)),
    ("ln1w", (L, C)), ("ln1b", (L, C)),
    ("qkvw", (L, 3 * C, C)), ("qkvb", (L, 3 * C)),
    ("attprojw", (L, C, C)), ("attprojb", (L, C)),
    ("ln2w", (L, C)), ("ln2b", (L, C)),
    ("fcw", (L, 4 * C, C)), ("fcb", (L, 4 * C)),
    ("fcprojw", (L, C, 4 * C)), ("fcprojb", (L, C)),
    ("lnfw", (C,)), ("lnfb", (C,)),
]


def make_params(gen):
    p = {}
    for name, shape in TENSORS:
        if name.startswith("ln") and name.endswith("w"):
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen)
        elif name.endswith("b"):
            t = 0.05 * torch.randn(shape, generator=gen)
        else:
            # Larger than GPT-2's 0.02 so attention and GELU are far from linear.
            t = 0.3 * torch.randn(shape, generator=gen)
        # Weights are what the fp32 file holds; compute in float64 from them.
        p[name] = t.float().double().requires_grad_(True)
    return p


def forward(p, idx, tgt):
    hs = C // NH
    x = p["wte"][idx] + p["wpe"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        h = F.layer_norm(x, (C,), p["ln1w"][l], p["ln1b"][l], eps=1e-5)
        qkv = h @ p["qkvw"][l].T + p["qkvb"][l]
        q, k, v = qkv.split(C, dim=2)
        q = q.view(B, T, NH, hs).transpose(1, 2)
        k = k.view(B, T, NH, hs).transpose(1, 2)
        v = v.view(B, T, NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ p["attprojw"][l].T + p["attprojb"][l]
        h = F.layer_norm(x, (C,), p["ln2w"][l], p["ln2b"][l], eps=1e-5)
        h = F.gelu(h @ p["fcw"][l].T + p["fcb"][l], approximate="tanh")
        x = x + h @ p["fcprojw"][l].T + p["fcprojb"][l]
    x = F.layer_norm(x, (C,), p["lnfw"], p["lnfb"], eps=1e-5)
    logits = x @ p["wte"].T  # [B, T, Vp]; padded columns are not in the loss
    loss = F.cross_entropy(logits[..., :V].reshape(-1, V), tgt.reshape(-1))
    return logits, loss


def ints(values):
    return struct.pack(f"<{len(values)}i", *values)


def floats(t):
    flat = t.detach().float().reshape(-1).tolist()
    return struct.pack(f"<{len(flat)}f", *flat)


def header(values):
    return ints(list(values) + [0] * (256 - len(values)))


def main():
    gen = torch.Generator().manual_seed(SEED)
    p = make_params(gen)
    seq = torch.randint(0, V, (B, T + 1), generator=gen)
    idx, tgt = seq[:, :T], seq[:, 1:]
    logits, loss = forward(p, idx, tgt)
    loss.backward()
    os.makedirs(OUT_DIR, exist_ok=True)
    with open(os.path.join(OUT_DIR, "gpt_fixture_model.bin"), "wb") as f:
        f.write(header([20240326, 3, MAX_T, V, L, NH, C, VP]))
        for name, _ in TENSORS:
            f.write(floats(p[name]))
    with open(os.path.join(OUT_DIR, "gpt_fixture_state.bin"), "wb") as f:
        f.write(header([20240327, 2, B, T, V, VP]))
        f.write(ints(idx.reshape(-1).tolist()))
        f.write(ints(tgt.reshape(-1).tolist()))
        f.write(floats(logits))
        f.write(struct.pack("<f", loss.item()))
        for name, _ in TENSORS:
            f.write(floats(p[name].grad))
    print(f"torch {torch.__version__}: loss {loss.item():.9f}, wrote {OUT_DIR}/gpt_fixture_*.bin")


if __name__ == "__main__":
    main()
