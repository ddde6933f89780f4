#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A synthetic Hugging Face checkpoint of a real Llama-family shape.

The published configs of SmolLM2-135M, SmolLM2-360M, Qwen2.5-0.5B and
Llama-3.2-1B (../shared/REFERENCE.md, "Llama-family models") written as
config.json, and random weights under Hugging Face's tensor names in BF16
(or F32/F16), sharded with model.safetensors.index.json as transformers'
save_pretrained writes them: what `zerodp train --init-from DIR` reads, made
without zerodp (PyTorch draws the values and rounds them; this file writes
the format). Matrices N(0, 0.02), norms 1, biases 0, the seed fixed.

  /usr/bin/python3 tools/make_synthetic_hf_checkpoint.py smollm2-135m OUT \\
      [--dtype bf16] [--max-shard-mb 200] [--seed 1]
(Debian's python3-torch, so /usr/bin/python3, not a pyenv one.)
"""
import argparse
import json
import os

import torch

# The published configs: (architecture, hidden, layers, heads, kv_heads,
# head_dim, intermediate, vocab, max_position, theta, eps, qkv_bias,
# rope_scaling).
LLAMA3_SCALING = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192}
CONFIGS = {
    "smollm2-135m": ("LlamaForCausalLM", 576, 30, 9, 3, 64, 1536, 49152, 8192, 100000.0, 1e-5, False, None),
    "smollm2-360m": ("LlamaForCausalLM", 960, 32, 15, 5, 64, 2560, 49152, 8192, 10000.0, 1e-5, False, None),
    "qwen2.5-0.5b": ("Qwen2ForCausalLM", 896, 24, 14, 2, 64, 4864, 151936, 32768, 1000000.0, 1e-6, True, None),
    "llama3.2-1b": ("LlamaForCausalLM", 2048, 16, 32, 8, 64, 8192, 128256, 131072, 500000.0, 1e-5, False,
                    LLAMA3_SCALING),
}
DTYPES = {"bf16": (torch.bfloat16, "BF16", "bfloat16"), "f16": (torch.float16, "F16", "float16"),
          "f32": (torch.float32, "F32", "float32")}


def config_json(name, torch_dtype):
    arch, C, L, H, Hkv, d, I, V, maxpos, theta, eps, bias, scaling = CONFIGS[name]
    c = {"architectures": [arch], "model_type": "qwen2" if arch.startswith("Qwen2") else "llama",
         "vocab_size": V, "hidden_size": C, "intermediate_size": I, "num_hidden_layers": L,
         "num_attention_heads": H, "num_key_value_heads": Hkv, "head_dim": d, "hidden_act": "silu",
         "max_position_embeddings": maxpos, "rms_norm_eps": eps, "rope_theta": theta, "rope_scaling": scaling,
         "tie_word_embeddings": True, "torch_dtype": torch_dtype}
    if not bias:
        c["attention_bias"] = False
        c["mlp_bias"] = False
    return c


def tensor_shapes(name):
    """(HF name, shape, kind) in Hugging Face's order; kind: matrix, norm or bias."""
    arch, C, L, H, Hkv, d, I, V, *_rest = CONFIGS[name]
    bias = CONFIGS[name][11]
    out = [("model.embed_tokens.weight", (V, C), "matrix")]
    for i in range(L):
        p = f"model.layers.{i}."
        out.append((p + "input_layernorm.weight", (C,), "norm"))
        for proj, rows in (("q", H * d), ("k", Hkv * d), ("v", Hkv * d)):
            out.append((p + f"self_attn.{proj}_proj.weight", (rows, C), "matrix"))
            if bias:
                out.append((p + f"self_attn.{proj}_proj.bias", (rows,), "bias"))
        out.append((p + "self_attn.o_proj.weight", (C, H * d), "matrix"))
        out.append((p + "post_attention_layernorm.weight", (C,), "norm"))
        out.append((p + "mlp.gate_proj.weight", (I, C), "matrix"))
        out.append((p + "mlp.up_proj.weight", (I, C), "matrix"))
        out.append((p + "mlp.down_proj.weight", (C, I), "matrix"))
    out.append(("model.norm.weight", (C,), "norm"))
    return out


def values(shape, kind, gen, dtype):
    if kind == "matrix":
        return (0.02 * torch.randn(shape, generator=gen, dtype=torch.float32)).to(dtype)
    return torch.full(shape, 1.0 if kind == "norm" else 0.0, dtype=dtype)


def write_file(path, entries, st_dtype):
    """entries: [(name, tensor)]; the safetensors layout, 8-byte aligned header."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, t in entries:
        n = t.numel() * t.element_size()
        header[name] = {"dtype": st_dtype, "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for _, t in entries:
            raw = t.contiguous().view(torch.int16 if t.element_size() == 2 else torch.int32)
            f.write(raw.numpy().astype("<i2" if t.element_size() == 2 else "<i4").tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("preset", choices=sorted(CONFIGS))
    ap.add_argument("out")
    ap.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    ap.add_argument("--max-shard-mb", type=float, default=200.0, help="bytes of tensors per file, in MB (1e6)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    dtype, st_dtype, torch_dtype = DTYPES[a.dtype]
    os.makedirs(a.out, exist_ok=False)
    gen = torch.Generator().manual_seed(a.seed)
    limit = int(a.max_shard_mb * 1e6)
    shards, current, size, total = [], [], 0, 0
    for name, shape, kind in tensor_shapes(a.preset):
        t = values(shape, kind, gen, dtype)
        n = t.numel() * t.element_size()
        if current and size + n > limit:
            shards.append(current)
            current, size = [], 0
        current.append((name, t))
        size += n
        total += n
    shards.append(current)
    weight_map = {}
    for k, entries in enumerate(shards):
        fname = "model.safetensors" if len(shards) == 1 else f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors"
        write_file(os.path.join(a.out, fname), entries, st_dtype)
        for name, _ in entries:
            weight_map[name] = fname
    if len(shards) > 1:
        with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config_json(a.preset, torch_dtype), f, indent=2)
    print(f"{a.out}: {a.preset}, {sum(len(s) for s in shards)} tensors, {total} bytes of {st_dtype} "
          f"in {len(shards)} file(s)")


if __name__ == "__main__":
    main()
