#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch baseline for `zerodp bench model`: the same GPT (default: the
gpt-bench preset, 6 layers / 6 heads / 384 channels / vocab 50257 / maxT 64),
fp32, one thread, forward + backward + AdamW, B=4, T=64; prints tokens/s and
the same run's sgemm GFLOP/s (torch.mm, n=1024), so the two programs can be
compared as ratios on one machine. Run with Debian's python3-torch:
  /usr/bin/python3 tools/bench_torch_gpt.py [--layers 6 --heads 6 --channels 384 --vocab 50257 --steps 5]
"""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, c, nh, t):
        super().__init__()
        self.nh = nh
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.qkv, self.proj = nn.Linear(c, 3 * c), nn.Linear(c, c)
        self.fc, self.fcproj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
        self.register_buffer("mask", torch.tril(torch.ones(t, t, dtype=torch.bool)))

    def forward(self, x):
        b, t, c = x.shape
        hs = c // self.nh
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.nh, hs).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, layers, heads, channels, vocab, max_t):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, channels), nn.Embedding(max_t, channels)
        self.blocks = nn.ModuleList(Block(channels, heads, max_t) for _ in range(layers))
        self.lnf = nn.LayerNorm(channels)
        for name, p in self.named_parameters():  # GPT-2 init
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(("proj.weight", "fcproj.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for blk in self.blocks:
            x = blk(x)
        logits = self.lnf(x) @ self.wte.weight.T  # tied head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--heads", type=int, default=6)
    ap.add_argument("--channels", type=int, default=384)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    x = torch.randn(1024, 1024)
    best = 0.0
    for _ in range(4):
        t0 = time.perf_counter()
        torch.mm(x, x)
        best = max(best, 2 * 1024**3 / (time.perf_counter() - t0) / 1e9)
    model = Gpt(a.layers, a.heads, a.channels, a.vocab, a.seq)
    nparams = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.0)
    idx = torch.randint(0, a.vocab, (a.batch, a.seq))
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq))
    times = []
    for step in range(a.steps + 1):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(idx, tgt)
        loss.backward()
        opt.step()
        if step > 0:
            times.append(time.perf_counter() - t0)
    step_s = sum(times) / len(times)
    print(f"torch {torch.__version__}, 1 thread, {nparams} params, B={a.batch} T={a.seq}: "
          f"{a.batch * a.seq / step_s:.1f} tokens/s ({step_s * 1e3:.1f} ms/step, loss {loss.item():.4f}); "
          f"sgemm {best:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
