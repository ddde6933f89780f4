#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the Hugging Face GPT-2 fixture for tests/ckpt/hf_test.cc.

1. Trains a small GPT for a few steps with zerodp (fixed seed, one rank,
   fp32) and exports it with `zerodp ckpt consolidate` (OUT/hf/).
2. Loads OUT/hf/model.safetensors and config.json into a GPT-2 written here
   in PyTorch with Hugging Face's layout and semantics (GPT2LMHeadModel:
   Conv1D y = x @ W + b with W [in, out]; q, k, v split along c_attn's
   output; GELU's tanh form "gelu_new"; layernorm eps from config.json;
   causal attention scaled by 1/sqrt(head size); lm_head tied to wte), all in
   float64 from the fp32 weights, and computes the logits of fixed tokens.
3. Writes tests/weights/fixtures/hf_gpt2/: model.safetensors and config.json
   (zerodp's export, as written) and logits.json (the tokens, torch's logits
   [T, V] and the zerodp model config).

tests/cli/cli_files_test.cc (HfFixtureIsWhatZerodpWrites) runs the same
zerodp commands (TRAIN below) and compares the export with the fixture.
Needs Debian's python3-torch (apt-get install python3-torch); no
transformers. Run from the repository root after building zerodp:
  /usr/bin/python3 tools/make_hf_fixture.py [--zerodp build/zerodp]
"""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import tempfile

import torch
import torch.nn.functional as F

MODEL = {"kind": "gpt", "layers": 2, "heads": 2, "channels": 16, "vocab": 260, "max_seq_len": 16}
PADDED_VOCAB = 384  # zerodp's default: the vocabulary rounded up to a multiple of 128
# Keep in step with tests/cli/cli_files_test.cc.
TRAIN = ["--seed", "14", "--steps", "4", "--ranks", "1", "--stage", "0", "--precision", "fp32", "--lr", "1e-2",
         "--micro-batch", "4", "--seq-len", "16", "--sample-tokens", "0", "--held-out", "0", "--eval-every", "0"]
OUT_DIR = os.path.join("tests", "weights", "fixtures", "hf_gpt2")
TOKENS = [ord(c) for c in "12+34=046\n57+08="]  # 16 tokens: the whole context


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32", (name, t["dtype"])
        begin, end = t["data_offsets"]
        values = torch.frombuffer(bytearray(data[base + begin:base + end]), dtype=torch.float32)
        tensors[name] = values.reshape(t["shape"]).double()
    return tensors


def conv1d(x, w, b):
    """transformers' Conv1D: w is [in, out]."""
    return x @ w + b


def gpt2_logits(w, cfg, idx):
    """GPT2LMHeadModel's forward, written out: idx [T] -> logits [T, V]."""
    C, NH, L = cfg["n_embd"], cfg["n_head"], cfg["n_layer"]
    eps = cfg["layer_norm_epsilon"]
    assert cfg["activation_function"] == "gelu_new"
    T = len(idx)
    hs = C // NH
    p = "transformer."
    x = w[p + "wte.weight"][idx] + w[p + "wpe.weight"][:T]
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for l in range(L):
        h = f"{p}h.{l}."
        a = F.layer_norm(x, (C,), w[h + "ln_1.weight"], w[h + "ln_1.bias"], eps=eps)
        q, k, v = conv1d(a, w[h + "attn.c_attn.weight"], w[h + "attn.c_attn.bias"]).split(C, dim=1)
        q, k, v = (t.view(T, NH, hs).transpose(0, 1) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(0, 1).reshape(T, C)
        x = x + conv1d(y, w[h + "attn.c_proj.weight"], w[h + "attn.c_proj.bias"])
        m = F.layer_norm(x, (C,), w[h + "ln_2.weight"], w[h + "ln_2.bias"], eps=eps)
        m = F.gelu(conv1d(m, w[h + "mlp.c_fc.weight"], w[h + "mlp.c_fc.bias"]), approximate="tanh")
        x = x + conv1d(m, w[h + "mlp.c_proj.weight"], w[h + "mlp.c_proj.bias"])
    x = F.layer_norm(x, (C,), w[p + "ln_f.weight"], w[p + "ln_f.bias"], eps=eps)
    return x @ w[p + "wte.weight"].T  # the tied lm_head


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--zerodp", default=os.path.join("build", "zerodp"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ckpt, out = os.path.join(tmp, "ckpt"), os.path.join(tmp, "out")
        subprocess.run([args.zerodp, "train", "--model", json.dumps(MODEL), *TRAIN, "--save", ckpt], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run([args.zerodp, "ckpt", "consolidate", ckpt, out], check=True, stdout=subprocess.DEVNULL)
        os.makedirs(OUT_DIR, exist_ok=True)
        for name in ("model.safetensors", "config.json"):
            shutil.copyfile(os.path.join(out, "hf", name), os.path.join(OUT_DIR, name))

    with open(os.path.join(OUT_DIR, "config.json")) as f:
        cfg = json.load(f)
    weights = read_safetensors(os.path.join(OUT_DIR, "model.safetensors"))
    assert weights["transformer.wte.weight"].shape == (MODEL["vocab"], MODEL["channels"])
    with torch.no_grad():
        logits = gpt2_logits(weights, cfg, torch.tensor(TOKENS))
    fixture = {
        "generated_by": "tools/make_hf_fixture.py",
        "zerodp_train": ["--model", json.dumps(MODEL), *TRAIN],
        "model": dict(MODEL, padded_vocab=PADDED_VOCAB),
        "tokens": TOKENS,
        "logits": [[float(f"{x:.12g}") for x in row] for row in logits.tolist()],
    }
    with open(os.path.join(OUT_DIR, "logits.json"), "w") as f:
        json.dump(fixture, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {OUT_DIR}: logits [{len(TOKENS)}, {MODEL['vocab']}], max |logit| {logits.abs().max().item():.4g}")


if __name__ == "__main__":
    main()
