#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the benchmark's token data as llm.c shards (256 int32 header: magic
20240520, version 1, token count; then uint16 tokens): OUT/peers_train.bin and
OUT/peers_val.bin. Both zerodp (`train --data OUT/peers_train.bin`, which finds
the _val file beside it) and bench/peers/torch_ddp.py read these files, so the
two sides see the same token stream.

The stream is synthetic but learnable, with no download: 4,000 fixed "phrases"
of 4..24 token ids in [0, 50257), drawn with Zipf-like frequencies and
concatenated. A model that learns the phrases drives the loss well below
ln(50257) = 10.8, so the loss curves of the two programs say something.
Deterministic (numpy RandomState with a fixed seed).
  /usr/bin/python3 bench/peers/make_data.py OUT_DIR [--tokens 1000000]
"""
import argparse
import os

import numpy as np

VOCAB = 50257


def shard(path, tokens):
    header = np.zeros(256, dtype=np.int32)
    header[0], header[1], header[2] = 20240520, 1, len(tokens)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(tokens.astype(np.uint16).tobytes())


def stream(rng, phrases, weights, n):
    out, total = [], 0
    while total < n:
        for i in rng.choice(len(phrases), size=4096, p=weights):
            out.append(phrases[i])
            total += len(phrases[i])
    return np.concatenate(out)[:n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tokens", type=int, default=1_000_000)
    a = ap.parse_args()
    rng = np.random.RandomState(20240520)
    phrases = [rng.randint(0, VOCAB, size=rng.randint(4, 25)) for _ in range(4000)]
    weights = 1.0 / np.arange(1, len(phrases) + 1) ** 0.8
    weights /= weights.sum()
    os.makedirs(a.out, exist_ok=True)
    shard(os.path.join(a.out, "peers_train.bin"), stream(rng, phrases, weights, a.tokens))
    shard(os.path.join(a.out, "peers_val.bin"), stream(rng, phrases, weights, a.tokens // 10))


if __name__ == "__main__":
    main()
