#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch side of the peer benchmark: the gpt-bench GPT (model code from
tools/bench_torch_gpt.py) trained by N processes on gloo, 1 thread each, fp32,
AdamW, either
  --mode ddp    DistributedDataParallel (= zerodp stage 0), or
  --mode zero1  DDP + torch.distributed.optim.ZeroRedundancyOptimizer (= stage 1).
(FSDP in torch 1.13 needs CUDA, so stages 2 and 3 have no peer here.)

Same weights: --model-bin is llm.c's fp32 model file that `zerodp ckpt
consolidate` writes from a zerodp checkpoint saved after one step at lr 0,
i.e. zerodp's initial weights for that seed. The padded vocabulary rows
(V..Vp) are dropped: they take no part in the loss.
Same data: the llm.c token shard zerodp reads, sampled with zerodp's rule
(src/train/sampler.cc): sample j of step s starts at
SplitMix64(SplitMix64(seed ^ SplitMix64(s)) + j) mod (len - T), and rank r
takes samples [r*B, r*B + B). So step s of both programs sees the same tokens
and the loss curves can be compared step by step.

Writes one JSON object to --out: mode, ranks, tokens_per_step, per-step
seconds (rank 0's wall time of batch + zero_grad + forward + backward + step),
the global mean loss per step, and every rank's peak RSS (getrusage, KiB).
  /usr/bin/python3 bench/peers/torch_ddp.py --mode ddp --model-bin initw/model.bin \
      --data peers_train.bin --steps 8 --out ddp.json
"""
import argparse
import json
import os
import resource
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from bench_torch_gpt import Gpt  # noqa: E402  (the models engineer's PyTorch GPT)

MASK = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def window_start(seed, step, sample, n_tokens, t):
    return (splitmix64((splitmix64(seed ^ splitmix64(step)) + sample) & MASK)) % (n_tokens - t)


def read_shard(path):
    header = np.fromfile(path, dtype=np.int32, count=256)
    if header[0] != 20240520 or header[1] != 1:
        raise SystemExit(f"[torch_ddp] {path} is not an llm.c token shard (magic {header[0]}, version {header[1]})")
    return np.fromfile(path, dtype=np.uint16, offset=1024, count=int(header[2])).astype(np.int64)


def load_llmc(model, path):
    """llm.c fp32 model file -> the PyTorch modules (weights are [out, in] on both sides)."""
    header = np.fromfile(path, dtype=np.int32, count=256)
    if header[0] != 20240326 or header[1] != 3:
        raise SystemExit(f"[torch_ddp] {path} is not an llm.c fp32 model file")
    max_t, v, layers, _, c, vp = (int(x) for x in header[2:8])
    flat = torch.from_numpy(np.fromfile(path, dtype=np.float32, offset=1024))
    shapes = [("wte", (vp, c)), ("wpe", (max_t, c)), ("ln1w", (layers, c)), ("ln1b", (layers, c)),
              ("qkvw", (layers, 3 * c, c)), ("qkvb", (layers, 3 * c)), ("attprojw", (layers, c, c)),
              ("attprojb", (layers, c)), ("ln2w", (layers, c)), ("ln2b", (layers, c)),
              ("fcw", (layers, 4 * c, c)), ("fcb", (layers, 4 * c)), ("fcprojw", (layers, c, 4 * c)),
              ("fcprojb", (layers, c)), ("lnfw", (c,)), ("lnfb", (c,))]
    t, at = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape))
        t[name] = flat[at:at + n].view(shape)
        at += n
    if at != flat.numel():
        raise SystemExit(f"[torch_ddp] {path}: {flat.numel()} floats, the header implies {at}")
    with torch.no_grad():
        model.wte.weight.copy_(t["wte"][:v])
        model.wpe.weight.copy_(t["wpe"][:model.wpe.weight.shape[0]])
        for i, b in enumerate(model.blocks):
            for mod, w, bias in ((b.ln1, "ln1w", "ln1b"), (b.qkv, "qkvw", "qkvb"), (b.proj, "attprojw", "attprojb"),
                                 (b.ln2, "ln2w", "ln2b"), (b.fc, "fcw", "fcb"), (b.fcproj, "fcprojw", "fcprojb")):
                mod.weight.copy_(t[w][i])
                mod.bias.copy_(t[bias][i])
        model.lnf.weight.copy_(t["lnfw"])
        model.lnf.bias.copy_(t["lnfb"])
    return {"max_t": max_t, "vocab": v, "layers": layers, "heads": int(header[5]), "channels": c}


def worker(rank, a, port):
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=a.ranks)
    header = np.fromfile(a.model_bin, dtype=np.int32, count=256)
    model = Gpt(int(header[4]), int(header[5]), int(header[6]), int(header[3]), a.seq)
    load_llmc(model, a.model_bin)
    # gloo cannot broadcast the bool causal masks (constant buffers): leave them out of DDP's sync.
    DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(
        model, [name for name, _ in model.named_buffers() if name.endswith("mask")])
    ddp = DistributedDataParallel(model, broadcast_buffers=False)
    if a.mode == "ddp":
        opt = torch.optim.AdamW(ddp.parameters(), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    else:
        from torch.distributed.optim import ZeroRedundancyOptimizer
        opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.AdamW, lr=a.lr,
                                      betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    tokens = read_shard(a.data)
    b, t = a.batch, a.seq
    seconds, losses = [], []
    for step in range(a.steps):
        t0 = time.perf_counter()
        starts = [window_start(a.seed, step, rank * b + i, len(tokens), t) for i in range(b)]
        idx = torch.from_numpy(np.stack([tokens[s:s + t] for s in starts]))
        tgt = torch.from_numpy(np.stack([tokens[s + 1:s + t + 1] for s in starts]))
        opt.zero_grad(set_to_none=True)
        # --autocast bf16: CPU autocast runs the matrix products in bf16
        # (oneDNN) with fp32 weights and optimizer, PyTorch's mixed precision.
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.autocast == "bf16"):
            loss = ddp(idx, tgt)
        loss.backward()
        opt.step()
        seconds.append(time.perf_counter() - t0)
        losses.append(loss.item())
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    gathered = [None] * a.ranks
    dist.all_gather_object(gathered, {"losses": losses, "rss_kb": rss})
    if rank == 0:
        mean_loss = [sum(g["losses"][s] for g in gathered) / a.ranks for s in range(a.steps)]
        out = {"program": "torch", "torch": torch.__version__, "mode": a.mode, "autocast": a.autocast, "ranks": a.ranks,
               "tokens_per_step": a.ranks * b * t, "step_seconds": seconds, "loss": mean_loss,
               "rss_kb": [g["rss_kb"] for g in gathered]}
        with open(a.out, "w") as f:
            json.dump(out, f)
    # gloo's teardown in torch 1.13 sometimes leaves the last rank spinning in
    # destroy_process_group after its peer has gone: meet once more, then leave
    # without tearing down (the process ends either way).
    dist.barrier()
    sys.stdout.flush()
    os._exit(0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["ddp", "zero1"], required=True)
    ap.add_argument("--model-bin", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--autocast", choices=["none", "bf16"], default="none")
    a = ap.parse_args()
    with socket.socket() as s:  # a free port for gloo's rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(a, port), nprocs=a.ranks, join=True)


if __name__ == "__main__":
    main()
