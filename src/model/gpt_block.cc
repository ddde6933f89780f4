// SPDX-License-Identifier: Apache-2.0
#include "model/gpt_block.h"

#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/gelu.h"
#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "kernels/profile.h"
#include "model/product_inputs.h"

namespace zerodp::model::detail {

using kernels::KernelKind;
using kernels::LinearShape;
using kernels::ScopedKernelTimer;

namespace {

std::span<float> slice(std::span<float> p, size_t offset, size_t count) { return p.subspan(offset, count); }

}  // namespace

void block_forward(const GptConfig& cfg, const BlockLayout& lay, UnitParams params, std::span<const float> x,
                   LayerActs& a, std::span<float> out, GptWorkspace& ws) {
  const int N = ws.rows();
  const int C = cfg.channels;
  const size_t c = C;
  kernels::Profile* prof = ws.profile();
  const kernels::AttentionShape att_shape{ws.micro_batch(), ws.seq_len(), C, cfg.heads};
  {
    ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
    kernels::layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, params.vector(lay.ln1w, c), params.vector(lay.ln1b, c),
                               N, C);
  }
  {
    const LinearShape s{N, C, 3 * C};
    ScopedKernelTimer t(prof, KernelKind::kMatmul, kernels::linear_flops(s));
    kernels::linear_forward(a.qkv, a.ln1, params.matrix(lay.qkvw, 3 * c * c), params.vector(lay.qkvb, 3 * c), s);
  }
  keep_product_input(a.ln1, a.ln1_kept);
  {
    ScopedKernelTimer t(prof, KernelKind::kAttention, kernels::attention_flops(att_shape));
    kernels::attention_forward(a.atty, a.att, a.qkv, att_shape);
  }
  keep_product_input(a.qkv, a.qkv_kept);
  {
    const LinearShape s{N, C, C};
    ScopedKernelTimer t(prof, KernelKind::kMatmul, kernels::linear_flops(s));
    kernels::linear_forward(a.res2, a.atty, params.matrix(lay.attprojw, c * c), params.vector(lay.attprojb, c), s);
  }
  keep_product_input(a.atty, a.atty_kept);
  {
    ScopedKernelTimer t(prof, KernelKind::kResidual);
    kernels::accumulate(a.res2, x);  // res2 = x + attproj(...)
  }
  {
    ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
    kernels::layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, params.vector(lay.ln2w, c),
                               params.vector(lay.ln2b, c), N, C);
  }
  {
    const LinearShape s{N, C, 4 * C};
    ScopedKernelTimer t(prof, KernelKind::kMatmul, kernels::linear_flops(s));
    kernels::linear_forward(a.fch, a.ln2, params.matrix(lay.fcw, 4 * c * c), params.vector(lay.fcb, 4 * c), s);
  }
  keep_product_input(a.ln2, a.ln2_kept);
  {
    ScopedKernelTimer t(prof, KernelKind::kGelu);
    kernels::gelu_forward(a.fch_gelu, a.fch);
  }
  {
    const LinearShape s{N, 4 * C, C};
    ScopedKernelTimer t(prof, KernelKind::kMatmul, kernels::linear_flops(s));
    kernels::linear_forward(out, a.fch_gelu, params.matrix(lay.fcprojw, 4 * c * c), params.vector(lay.fcprojb, c), s);
  }
  keep_product_input(a.fch_gelu, a.fch_gelu_kept);
  {
    ScopedKernelTimer t(prof, KernelKind::kResidual);
    kernels::accumulate(out, a.res2);  // out = res2 + fcproj(...)
  }
}

void block_backward(const GptConfig& cfg, const BlockLayout& lay, UnitParams params, std::span<float> grads,
                    std::span<const float> x, LayerActs& a, GptWorkspace& ws) {
  const int N = ws.rows();
  const int C = cfg.channels;
  const size_t c = C;
  kernels::Profile* prof = ws.profile();
  const kernels::AttentionShape att_shape{ws.micro_batch(), ws.seq_len(), C, cfg.heads};
  std::span<float> dres = ws.dresid();  // [N, C]: d(out) in, d(x) out
  restore_product_input(a.fch_gelu_kept, a.fch_gelu);
  {
    // out = res2 + fcproj(fch_gelu): d(fch_gelu) = d(out) @ Wfcproj
    const LinearShape s{N, 4 * C, C};
    ScopedKernelTimer t(prof, KernelKind::kMatmul, 2 * kernels::linear_flops(s));
    kernels::linear_backward(ws.dfch_gelu(), slice(grads, lay.fcprojw, 4 * c * c), slice(grads, lay.fcprojb, c), dres,
                             a.fch_gelu, params.matrix(lay.fcprojw, 4 * c * c), s, false);
  }
  {
    ScopedKernelTimer t(prof, KernelKind::kGelu);
    kernels::gelu_backward(ws.dfch(), a.fch, ws.dfch_gelu());
  }
  restore_product_input(a.ln2_kept, a.ln2);
  {
    const LinearShape s{N, C, 4 * C};
    ScopedKernelTimer t(prof, KernelKind::kMatmul, 2 * kernels::linear_flops(s));
    kernels::linear_backward(ws.dln(), slice(grads, lay.fcw, 4 * c * c), slice(grads, lay.fcb, 4 * c), ws.dfch(), a.ln2,
                             params.matrix(lay.fcw, 4 * c * c), s, false);
  }
  {
    // d(res2) = d(out) (residual) + ln2 backward: accumulate in place.
    ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
    kernels::layernorm_backward(dres, slice(grads, lay.ln2w, c), slice(grads, lay.ln2b, c), ws.dln(), a.res2,
                                params.vector(lay.ln2w, c), a.ln2_mean, a.ln2_rstd, N, C);
  }
  restore_product_input(a.atty_kept, a.atty);
  {
    const LinearShape s{N, C, C};
    ScopedKernelTimer t(prof, KernelKind::kMatmul, 2 * kernels::linear_flops(s));
    kernels::linear_backward(ws.datty(), slice(grads, lay.attprojw, c * c), slice(grads, lay.attprojb, c), dres, a.atty,
                             params.matrix(lay.attprojw, c * c), s, false);
  }
  restore_product_input(a.qkv_kept, a.qkv);
  {
    ScopedKernelTimer t(prof, KernelKind::kAttention, 2 * kernels::attention_flops(att_shape));
    kernels::attention_backward(ws.dqkv(), ws.datt(), ws.datty(), a.qkv, a.att, att_shape);
  }
  restore_product_input(a.ln1_kept, a.ln1);
  {
    const LinearShape s{N, C, 3 * C};
    ScopedKernelTimer t(prof, KernelKind::kMatmul, 2 * kernels::linear_flops(s));
    kernels::linear_backward(ws.dln(), slice(grads, lay.qkvw, 3 * c * c), slice(grads, lay.qkvb, 3 * c), ws.dqkv(),
                             a.ln1, params.matrix(lay.qkvw, 3 * c * c), s, false);
  }
  {
    ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
    kernels::layernorm_backward(dres, slice(grads, lay.ln1w, c), slice(grads, lay.ln1b, c), ws.dln(), x,
                                params.vector(lay.ln1w, c), a.ln1_mean, a.ln1_rstd, N, C);
  }
}

}  // namespace zerodp::model::detail
