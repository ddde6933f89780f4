// SPDX-License-Identifier: Apache-2.0
#include "model/llama_block.h"

#include <algorithm>

#include "kernels/elementwise.h"
#include "kernels/gqa_attention.h"
#include "kernels/linear.h"
#include "kernels/profile.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/swiglu.h"
#include "model/product_inputs.h"

namespace zerodp::model::detail {
namespace {

using kernels::KernelKind;
using kernels::LinearShape;
using kernels::ScopedKernelTimer;

// The block's sizes, named as in llama_config.h.
struct Dims {
  int N, C, Dq, Dkv, F;
  size_t c, dq, dkv, f;
  kernels::GqaShape attention;
  kernels::RopeShape rope_q, rope_k;
};

Dims dims(const LlamaConfig& cfg, const LlamaWorkspace& ws) {
  const int B = ws.micro_batch(), T = ws.seq_len(), d = cfg.head_dim;
  const int Dq = cfg.heads * d, Dkv = cfg.kv_heads * d;
  return {ws.rows(),
          cfg.hidden,
          Dq,
          Dkv,
          cfg.intermediate,
          size_t(cfg.hidden),
          size_t(Dq),
          size_t(Dkv),
          size_t(cfg.intermediate),
          {B, T, cfg.heads, cfg.kv_heads, d},
          {B, T, cfg.heads, d},
          {B, T, cfg.kv_heads, d}};
}

// A bias span, empty when the family has none (its layout size is 0 then).
template <class Span>
Span bias(Span p, bool present, size_t offset, size_t count) {
  return present ? p.subspan(offset, count) : Span();
}

// A bias to read: the widened values, or none.
std::span<const float> bias(UnitParams& p, bool present, size_t offset, size_t count) {
  return present ? p.vector(offset, count) : std::span<const float>();
}

void linear(kernels::Profile* prof, std::span<float> out, std::span<const float> in, const kernels::Weights& w,
            std::span<const float> b, LinearShape s) {
  ScopedKernelTimer t(prof, KernelKind::kMatmul, kernels::linear_flops(s));
  kernels::linear_forward(out, in, w, b, s);
}

void linear_back(kernels::Profile* prof, std::span<float> din, std::span<float> dw, std::span<float> db,
                 std::span<const float> dout, std::span<const float> in, const kernels::Weights& w, LinearShape s,
                 bool accumulate) {
  ScopedKernelTimer t(prof, KernelKind::kMatmul, 2 * kernels::linear_flops(s));
  kernels::linear_backward(din, dw, db, dout, in, w, s, accumulate);
}

}  // namespace

void llama_block_forward(const LlamaConfig& cfg, const LlamaBlockLayout& lay, UnitParams p, std::span<const float> x,
                         LlamaActs& a, std::span<float> out, LlamaWorkspace& ws) {
  const Dims s = dims(cfg, ws);
  kernels::Profile* prof = ws.profile();
  const bool qb = cfg.qkv_bias;
  const float eps = static_cast<float>(cfg.norm_eps);
  {
    ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
    kernels::rmsnorm_forward(a.n1, a.rstd1, x, p.vector(lay.input_norm, s.c), s.N, s.C, eps);
  }
  linear(prof, a.q, a.n1, p.matrix(lay.q, s.dq * s.c), bias(p, qb, lay.q_bias, s.dq), {s.N, s.C, s.Dq});
  linear(prof, a.k, a.n1, p.matrix(lay.k, s.dkv * s.c), bias(p, qb, lay.k_bias, s.dkv), {s.N, s.C, s.Dkv});
  linear(prof, a.v, a.n1, p.matrix(lay.v, s.dkv * s.c), bias(p, qb, lay.v_bias, s.dkv), {s.N, s.C, s.Dkv});
  keep_product_input(a.n1, a.n1_kept);
  {
    ScopedKernelTimer t(prof, KernelKind::kAttention, kernels::gqa_attention_flops(s.attention));
    // In place: backward needs only the rotated q and k.
    kernels::rope_forward(a.q, a.q, ws.rope(), ws.positions(), s.rope_q);
    kernels::rope_forward(a.k, a.k, ws.rope(), ws.positions(), s.rope_k);
    kernels::gqa_attention_forward(a.y, a.att, a.q, a.k, a.v, ws.seg_start(), s.attention);
  }
  keep_product_input(a.q, a.q_kept);
  keep_product_input(a.k, a.k_kept);
  keep_product_input(a.v, a.v_kept);
  linear(prof, a.h, a.y, p.matrix(lay.o, s.c * s.dq), {}, {s.N, s.Dq, s.C});
  keep_product_input(a.y, a.y_kept);
  {
    ScopedKernelTimer t(prof, KernelKind::kResidual);
    kernels::accumulate(a.h, x);  // h = x + o(y)
  }
  {
    ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
    kernels::rmsnorm_forward(a.n2, a.rstd2, a.h, p.vector(lay.post_norm, s.c), s.N, s.C, eps);
  }
  linear(prof, a.gate, a.n2, p.matrix(lay.gate, s.f * s.c), {}, {s.N, s.C, s.F});
  linear(prof, a.up, a.n2, p.matrix(lay.up, s.f * s.c), {}, {s.N, s.C, s.F});
  keep_product_input(a.n2, a.n2_kept);
  {
    ScopedKernelTimer t(prof, KernelKind::kGelu);  // the MLP's activation
    kernels::swiglu_forward(a.m, a.gate, a.up);
  }
  linear(prof, out, a.m, p.matrix(lay.down, s.c * s.f), {}, {s.N, s.F, s.C});
  keep_product_input(a.m, a.m_kept);
  ScopedKernelTimer t(prof, KernelKind::kResidual);
  kernels::accumulate(out, a.h);  // out = h + down(m)
}

void llama_block_backward(const LlamaConfig& cfg, const LlamaBlockLayout& lay, UnitParams p, std::span<float> g,
                          std::span<const float> x, const LlamaActs& a, LlamaWorkspace& ws) {
  const Dims s = dims(cfg, ws);
  kernels::Profile* prof = ws.profile();
  const bool qb = cfg.qkv_bias;
  std::span<float> dresid = ws.dresid(), dn = ws.dn();
  // The MLP half: dresid holds d(out) = d(h) through the residual.
  restore_product_input(a.m_kept, a.m);
  linear_back(prof, ws.dm(), g.subspan(lay.down, s.c * s.f), {}, dresid, a.m, p.matrix(lay.down, s.c * s.f),
              {s.N, s.F, s.C}, false);
  {
    ScopedKernelTimer t(prof, KernelKind::kGelu);
    kernels::swiglu_backward(ws.dgate(), ws.dup(), ws.dm(), a.gate, a.up);
  }
  restore_product_input(a.n2_kept, a.n2);
  linear_back(prof, dn, g.subspan(lay.gate, s.f * s.c), {}, ws.dgate(), a.n2, p.matrix(lay.gate, s.f * s.c),
              {s.N, s.C, s.F}, false);
  linear_back(prof, dn, g.subspan(lay.up, s.f * s.c), {}, ws.dup(), a.n2, p.matrix(lay.up, s.f * s.c), {s.N, s.C, s.F},
              true);
  {
    ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
    // dresid += the norm's input gradient: now d(h).
    kernels::rmsnorm_backward(dresid, g.subspan(lay.post_norm, s.c), dn, a.h, p.vector(lay.post_norm, s.c), a.rstd2,
                              s.N, s.C);
  }
  // The attention half: d(h) = d(x) through the residual.
  restore_product_input(a.y_kept, a.y);
  linear_back(prof, ws.dy(), g.subspan(lay.o, s.c * s.dq), {}, dresid, a.y, p.matrix(lay.o, s.c * s.dq),
              {s.N, s.Dq, s.C}, false);
  restore_product_input(a.q_kept, a.q);
  restore_product_input(a.k_kept, a.k);
  restore_product_input(a.v_kept, a.v);
  {
    ScopedKernelTimer t(prof, KernelKind::kAttention, 2 * kernels::gqa_attention_flops(s.attention));
    kernels::gqa_attention_backward(ws.dq(), ws.dk(), ws.dv(), ws.datt(), ws.dy(), a.q, a.k, a.v, a.att, ws.seg_start(),
                                    s.attention);
    kernels::rope_backward(ws.dq(), ws.dq(), ws.rope(), ws.positions(), s.rope_q);
    kernels::rope_backward(ws.dk(), ws.dk(), ws.rope(), ws.positions(), s.rope_k);
  }
  restore_product_input(a.n1_kept, a.n1);
  linear_back(prof, dn, g.subspan(lay.q, s.dq * s.c), bias(g, qb, lay.q_bias, s.dq), ws.dq(), a.n1,
              p.matrix(lay.q, s.dq * s.c), {s.N, s.C, s.Dq}, false);
  linear_back(prof, dn, g.subspan(lay.k, s.dkv * s.c), bias(g, qb, lay.k_bias, s.dkv), ws.dk(), a.n1,
              p.matrix(lay.k, s.dkv * s.c), {s.N, s.C, s.Dkv}, true);
  linear_back(prof, dn, g.subspan(lay.v, s.dkv * s.c), bias(g, qb, lay.v_bias, s.dkv), ws.dv(), a.n1,
              p.matrix(lay.v, s.dkv * s.c), {s.N, s.C, s.Dkv}, true);
  ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
  // dresid += the input norm's gradient: now d(x).
  kernels::rmsnorm_backward(dresid, g.subspan(lay.input_norm, s.c), dn, x, p.vector(lay.input_norm, s.c), a.rstd1, s.N,
                            s.C);
}

}  // namespace zerodp::model::detail
