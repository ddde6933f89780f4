#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the Llama-family reference fixtures: the kernels', for
tests/kernels/llama_fixture_test.cc, and two whole tiny models, for the model
code's tests.

An independent implementation in plain PyTorch (Debian's python3-torch; no
transformers), written from the equations of docs/llama.md and REFERENCE.md
("Llama-family models"), computes in float64 from fp32 inputs and weights and
stores fp32. Run from the repository root:
  /usr/bin/python3 tools/make_llama_fixture.py   (Debian python, not a pyenv one)
The test suite only reads the committed files; it never needs torch.

File format: safetensors (the format Hugging Face checkpoints use): an 8-byte
little-endian header length n, n bytes of JSON (padded with spaces to a
multiple of 8) mapping each tensor name to {"dtype": "F32" | "I32", "shape":
[...], "data_offsets": [begin, end]} (byte offsets after the header), and an
optional "__metadata__" of string values; then the data, little-endian,
row-major, in header order.

1. tests/kernels/fixtures/llama_kernels.safetensors. Tensor names are
   "<case>.<tensor>"; gradients are of J = sum(out * dout) for the stored
   dout. Metadata gives the scalars.
   rmsnorm:  x [N,C], w [C], y [N,C], rstd [N], dy, dx [N,C], dw [C];
             metadata rmsnorm.eps.
   rope:     inv_freq [d/2] (float64 rounded), cos, sin [P, d/2] (the
             table of positions 0..P-1), positions [B*T] (I32), q [B,T,Hq,d],
             k [B,T,Hkv,d], q_out, k_out, dq_out, dk_out, dq, dk;
             metadata rope.theta, rope.head_dim.
   rope_llama3: the same with rope_scaling llama3; metadata
             rope_llama3.{theta, head_dim, factor, low_freq_factor,
             high_freq_factor, original_max_position_embeddings}.
   gqa:      q [B,T,Hq,d], k, v [B,T,Hkv,d], out [B,T,Hq,d], dout, dq, dk, dv.
   gqa_seg:  the same tensors with record ids [B,T] (I32): a query attends
             only earlier keys of its own record (a run of equal ids).
   swiglu:   gate [N], up [N], out, dout, dgate, dup.
2. tests/model/fixtures/llama_tiny_<name>/ for each model of MODELS:
   config.json        a Hugging Face config (LlamaForCausalLM or
                      Qwen2ForCausalLM)
   model.safetensors  the fp32 weights under Hugging Face's tensor names
                      (nn.Linear layout [out, in]; no lm_head.weight when tied)
   reference.safetensors
                      input_ids [B,T] and targets [B,T] (I32), logits [B,T,V],
                      loss [1] (cross-entropy, mean over the B*T targets), and
                      "grad.<name>" for every tensor of model.safetensors
                      (d loss / d weight; a tied embedding's gradient has both
                      of its uses).
"""
import json
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

KERNEL_PATH = os.path.join("tests", "kernels", "fixtures", "llama_kernels.safetensors")
MODEL_DIR = os.path.join("tests", "model", "fixtures")
SEED = 4404

# The two tiny models. "qwen2" is Qwen2's shape (q/k/v biases, o_proj none),
# here with Llama 3's rope_scaling and an original context so short that all
# three wavelength bands occur at head_dim 8.
MODELS = {
    "llama": dict(architecture="LlamaForCausalLM", model_type="llama", vocab=64, hidden=32, layers=2, heads=4,
                  kv_heads=2, head_dim=8, mlp=48, tied=True, theta=10000.0, eps=1e-5, qkv_bias=False,
                  rope_scaling=None, max_position=64),
    "qwen2": dict(architecture="Qwen2ForCausalLM", model_type="qwen2", vocab=64, hidden=32, layers=2, heads=4,
                  kv_heads=1, head_dim=8, mlp=48, tied=False, theta=10000.0, eps=1e-6, qkv_bias=True,
                  rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
                  max_position=128),
}
BATCH, SEQ = 2, 8


# ---------------------------------------------------------------- safetensors

def write_safetensors(path, tensors, metadata=None):
    """tensors: name -> torch tensor (float -> F32, integer -> I32), in order."""
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        t = t.detach()
        if t.is_floating_point():
            dtype, data = "F32", t.to(torch.float32).contiguous().numpy().astype("<f4").tobytes()
        else:
            dtype, data = "I32", t.to(torch.int32).contiguous().numpy().astype("<i4").tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------- the math

def f32(t):
    """fp32 values, computed on in float64 (what the fixture files hold)."""
    return t.float().double()


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def inv_freq(head_dim, theta, scaling):
    """theta^(-2j/d), j < d/2, in float64; Llama 3's wavelength bands if asked."""
    f = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    if scaling is None:
        return f
    assert scaling["rope_type"] == "llama3"
    factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = float(scaling["original_max_position_embeddings"])
    wavelen = 2 * math.pi / f
    out = f.clone()
    for j in range(len(f)):
        if wavelen[j] < old / hi:
            continue  # high frequency: kept
        if wavelen[j] > old / lo:
            out[j] = f[j] / factor  # low frequency: slowed by factor
        else:
            s = (old / wavelen[j] - lo) / (hi - lo)  # in between: blended
            out[j] = (1 - s) * f[j] / factor + s * f[j]
    return out


def rope_table(freq, positions):
    """cos, sin [P, d/2] of position * inv_freq, float64."""
    ang = positions.double()[:, None] * freq[None, :]
    return ang.cos(), ang.sin()


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def apply_rope(x, cos, sin, positions):
    """x [B,T,H,d]; positions [B,T] index the [P, d/2] tables."""
    c = torch.cat((cos, cos), dim=-1)[positions][:, :, None, :]  # [B,T,1,d]
    s = torch.cat((sin, sin), dim=-1)[positions][:, :, None, :]
    return x * c + rotate_half(x) * s


def gqa_attention(q, k, v, record_ids=None):
    """q [B,T,Hq,d], k v [B,T,Hkv,d] -> [B,T,Hq,d]; causal, within records."""
    B, T, Hq, d = q.shape
    g = Hq // k.shape[2]
    k = k.repeat_interleave(g, dim=2)  # kv head j serves query heads j*g .. j*g+g-1
    v = v.repeat_interleave(g, dim=2)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B,H,T,d]
    att = q @ k.transpose(-2, -1) / math.sqrt(d)
    allowed = torch.tril(torch.ones(T, T, dtype=torch.bool))[None, None]
    if record_ids is not None:
        allowed = allowed & (record_ids[:, None, :, None] == record_ids[:, None, None, :])
    att = att.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
    return (att @ v).transpose(1, 2)


def swiglu(gate, up):
    return F.silu(gate) * up


def grads(out_fn, inputs, gen):
    """out = out_fn(*inputs); returns out, dout, and d sum(out * dout) / d input."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = out_fn(*leaves)
    dout = f32(torch.randn(out.shape, generator=gen, dtype=torch.float64))
    (out * dout).sum().backward()
    return out, dout, [t.grad for t in leaves]


# ---------------------------------------------------------------- kernels

def kernel_fixture(gen):
    t, meta = {}, {}

    def randn(*shape, scale=1.0):
        return f32(scale * torch.randn(shape, generator=gen, dtype=torch.float64))

    # RMSNorm: rows of different scales, an odd C
    N, C, eps = 3, 20, 1e-5
    x = f32(randn(N, C) * torch.tensor([[0.1], [1.0], [7.0]], dtype=torch.float64))
    w = f32(1.0 + 0.2 * torch.randn(C, generator=gen, dtype=torch.float64))
    y, dy, (dx, dw) = grads(lambda a, b: rms_norm(a, b, eps), [x, w], gen)
    rstd = torch.rsqrt(x.pow(2).mean(-1) + eps)
    t.update({"rmsnorm.x": x, "rmsnorm.w": w, "rmsnorm.y": y, "rmsnorm.rstd": rstd, "rmsnorm.dy": dy,
              "rmsnorm.dx": dx, "rmsnorm.dw": dw})
    meta["rmsnorm.eps"] = repr(eps)

    # RoPE on q and k, plain and with Llama 3's scaling; packed positions.
    B, T, Hq, Hkv, d, P = 2, 5, 4, 2, 16, 70
    positions = torch.tensor([[0, 1, 2, 3, 4], [0, 1, 0, 1, 66]])
    for case, scaling in (("rope", None), ("rope_llama3", MODELS["qwen2"]["rope_scaling"])):
        freq = inv_freq(d, 10000.0, scaling)
        cos, sin = rope_table(freq, torch.arange(P))
        q, k = randn(B, T, Hq, d), randn(B, T, Hkv, d)
        qo, dqo, (dq,) = grads(lambda a: apply_rope(a, cos, sin, positions), [q], gen)
        ko, dko, (dk,) = grads(lambda a: apply_rope(a, cos, sin, positions), [k], gen)
        t.update({f"{case}.inv_freq": freq, f"{case}.cos": cos, f"{case}.sin": sin,
                  f"{case}.positions": positions.reshape(-1), f"{case}.q": q, f"{case}.k": k,
                  f"{case}.q_out": qo, f"{case}.k_out": ko, f"{case}.dq_out": dqo, f"{case}.dk_out": dko,
                  f"{case}.dq": dq, f"{case}.dk": dk})
        meta[f"{case}.theta"] = "10000"
        meta[f"{case}.head_dim"] = str(d)
        if scaling:
            for key in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"):
                meta[f"{case}.{key}"] = repr(scaling[key])
        # How far Hugging Face's fp32 table (fp32 angle) is from this one.
        ang32 = torch.arange(P, dtype=torch.float32)[:, None] * freq.float()[None, :]
        print(f"{case}: max |cos_fp32_angle - cos| over positions < {P}: "
              f"{(ang32.cos().double() - cos).abs().max().item():.2e}")

    # GQA: g = 3, odd head_dim; then records packed in rows.
    B, T, Hq, Hkv, d = 2, 7, 6, 2, 5
    q, k, v = randn(B, T, Hq, d, scale=1.5), randn(B, T, Hkv, d, scale=1.5), randn(B, T, Hkv, d)
    out, dout, (dq, dk, dv) = grads(gqa_attention, [q, k, v], gen)
    t.update({"gqa.q": q, "gqa.k": k, "gqa.v": v, "gqa.out": out, "gqa.dout": dout, "gqa.dq": dq, "gqa.dk": dk,
              "gqa.dv": dv})
    ids = torch.tensor([[3, 3, 3, 8, 9, 9, 9], [1, 1, 1, 1, 1, 1, 1]])
    out, dout, (dq, dk, dv) = grads(lambda a, b, c: gqa_attention(a, b, c, ids), [q, k, v], gen)
    t.update({"gqa_seg.q": q, "gqa_seg.k": k, "gqa_seg.v": v, "gqa_seg.record_ids": ids, "gqa_seg.out": out,
              "gqa_seg.dout": dout, "gqa_seg.dq": dq, "gqa_seg.dk": dk, "gqa_seg.dv": dv})

    # SwiGLU over a wide range of gates
    n = 53
    gate, up = randn(n, scale=4.0), randn(n)
    out, dout, (dgate, dup) = grads(swiglu, [gate, up], gen)
    t.update({"swiglu.gate": gate, "swiglu.up": up, "swiglu.out": out, "swiglu.dout": dout, "swiglu.dgate": dgate,
              "swiglu.dup": dup})
    write_safetensors(KERNEL_PATH, t, meta)
    print(f"wrote {KERNEL_PATH}")


# ---------------------------------------------------------------- whole models

def make_weights(cfg, gen):
    """Hugging Face names -> fp32 values (as float64 leaves)."""
    C, F_, V, d = cfg["hidden"], cfg["mlp"], cfg["vocab"], cfg["head_dim"]
    Hq, Hkv = cfg["heads"], cfg["kv_heads"]

    def randn(*shape, scale):
        return f32(scale * torch.randn(shape, generator=gen, dtype=torch.float64))

    w = {"model.embed_tokens.weight": randn(V, C, scale=0.3)}
    for i in range(cfg["layers"]):
        p = f"model.layers.{i}."
        w[p + "input_layernorm.weight"] = f32(1.0 + 0.1 * torch.randn(C, generator=gen, dtype=torch.float64))
        w[p + "self_attn.q_proj.weight"] = randn(Hq * d, C, scale=0.3)
        if cfg["qkv_bias"]:
            w[p + "self_attn.q_proj.bias"] = randn(Hq * d, scale=0.1)
        w[p + "self_attn.k_proj.weight"] = randn(Hkv * d, C, scale=0.3)
        if cfg["qkv_bias"]:
            w[p + "self_attn.k_proj.bias"] = randn(Hkv * d, scale=0.1)
        w[p + "self_attn.v_proj.weight"] = randn(Hkv * d, C, scale=0.3)
        if cfg["qkv_bias"]:
            w[p + "self_attn.v_proj.bias"] = randn(Hkv * d, scale=0.1)
        w[p + "self_attn.o_proj.weight"] = randn(C, Hq * d, scale=0.3)
        w[p + "post_attention_layernorm.weight"] = f32(1.0 + 0.1 * torch.randn(C, generator=gen,
                                                                                dtype=torch.float64))
        w[p + "mlp.gate_proj.weight"] = randn(F_, C, scale=0.3)
        w[p + "mlp.up_proj.weight"] = randn(F_, C, scale=0.3)
        w[p + "mlp.down_proj.weight"] = randn(C, F_, scale=0.3)
    w["model.norm.weight"] = f32(1.0 + 0.1 * torch.randn(C, generator=gen, dtype=torch.float64))
    if not cfg["tied"]:
        w["lm_head.weight"] = randn(V, C, scale=0.3)
    return {k: v.requires_grad_(True) for k, v in w.items()}


def linear(x, w, b=None):
    return x @ w.T + (b if b is not None else 0)


def model_forward(cfg, w, ids, targets):
    B, T = ids.shape
    Hq, Hkv, d, eps = cfg["heads"], cfg["kv_heads"], cfg["head_dim"], cfg["eps"]
    cos, sin = rope_table(inv_freq(d, cfg["theta"], cfg["rope_scaling"]), torch.arange(T))
    positions = torch.arange(T)[None, :].expand(B, T)
    x = w["model.embed_tokens.weight"][ids]
    for i in range(cfg["layers"]):
        p = f"model.layers.{i}."
        n1 = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = linear(n1, w[p + "self_attn.q_proj.weight"], w.get(p + "self_attn.q_proj.bias"))
        k = linear(n1, w[p + "self_attn.k_proj.weight"], w.get(p + "self_attn.k_proj.bias"))
        v = linear(n1, w[p + "self_attn.v_proj.weight"], w.get(p + "self_attn.v_proj.bias"))
        q = apply_rope(q.view(B, T, Hq, d), cos, sin, positions)
        k = apply_rope(k.view(B, T, Hkv, d), cos, sin, positions)
        y = gqa_attention(q, k, v.view(B, T, Hkv, d)).reshape(B, T, Hq * d)
        h = x + linear(y, w[p + "self_attn.o_proj.weight"])
        n2 = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        m = swiglu(linear(n2, w[p + "mlp.gate_proj.weight"]), linear(n2, w[p + "mlp.up_proj.weight"]))
        x = h + linear(m, w[p + "mlp.down_proj.weight"])
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg["tied"] else w["lm_head.weight"]
    logits = linear(x, head)  # [B,T,V]
    loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), targets.reshape(-1))
    return logits, loss


def hf_config(cfg):
    c = {
        "architectures": [cfg["architecture"]],
        "model_type": cfg["model_type"],
        "vocab_size": cfg["vocab"],
        "hidden_size": cfg["hidden"],
        "intermediate_size": cfg["mlp"],
        "num_hidden_layers": cfg["layers"],
        "num_attention_heads": cfg["heads"],
        "num_key_value_heads": cfg["kv_heads"],
        "head_dim": cfg["head_dim"],
        "hidden_act": "silu",
        "max_position_embeddings": cfg["max_position"],
        "rms_norm_eps": cfg["eps"],
        "rope_theta": cfg["theta"],
        "rope_scaling": cfg["rope_scaling"],
        "tie_word_embeddings": cfg["tied"],
        "torch_dtype": "float32",
    }
    if cfg["model_type"] == "llama":
        c["attention_bias"] = cfg["qkv_bias"]
        c["mlp_bias"] = False
    return c


def model_fixture(name, cfg, gen):
    w = make_weights(cfg, gen)
    seq = torch.randint(0, cfg["vocab"], (BATCH, SEQ + 1), generator=gen)
    ids, targets = seq[:, :SEQ], seq[:, 1:]
    logits, loss = model_forward(cfg, w, ids, targets)
    loss.backward()
    out = os.path.join(MODEL_DIR, f"llama_tiny_{name}")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(hf_config(cfg), f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(out, "model.safetensors"), w, {"format": "pt"})
    ref = {"input_ids": ids, "targets": targets, "logits": logits, "loss": loss.reshape(1)}
    ref.update({f"grad.{k}": v.grad for k, v in w.items()})
    write_safetensors(os.path.join(out, "reference.safetensors"), ref)
    n = sum(v.numel() for v in w.values())
    print(f"{out}: {n} parameters, loss {loss.item():.9f}")


def main():
    torch.set_default_dtype(torch.float64)
    gen = torch.Generator().manual_seed(SEED)
    kernel_fixture(gen)
    for name, cfg in MODELS.items():
        model_fixture(name, cfg, gen)
    print(f"torch {torch.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
