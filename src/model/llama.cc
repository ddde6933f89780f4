// SPDX-License-Identifier: Apache-2.0
#include "model/llama.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/convert.h"
#include "core/error.h"
#include "kernels/embedding.h"
#include "kernels/linear.h"
#include "kernels/profile.h"
#include "kernels/rmsnorm.h"
#include "kernels/softmax_xent.h"
#include "model/llama_block.h"
#include "model/llama_family.h"
#include "model/llama_workspace.h"

namespace zerodp::model {
namespace {

using kernels::KernelKind;
using kernels::ScopedKernelTimer;

LlamaWorkspace& as_llama(Workspace& ws) {
  auto* w = dynamic_cast<LlamaWorkspace*>(&ws);
  ZDP_CHECK(w != nullptr, ConfigError, "[llama] the workspace was not made by a Llama model");
  return *w;
}

}  // namespace

Llama::Llama(const LlamaConfig& config) : config_(config), layout_(llama_block_layout(config)) {
  config_.validate();
  const int L = config_.layers;
  const size_t embed = size_t(config_.vocab) * config_.hidden;
  size_t offset = 0;
  // The embedding's rows (and the untied head's) are C elements each: their
  // gradients can be made a few rows at a time (backward_weights_rows).
  const size_t row = config_.hidden;
  units_.push_back({"embedding", offset, embed, row});
  offset += embed;
  for (int l = 0; l < L; ++l) {
    units_.push_back({fmt::format("block{}", l), offset, layout_.count});
    offset += layout_.count;
  }
  units_.push_back({"norm", offset, size_t(config_.hidden)});
  offset += config_.hidden;
  if (!config_.tied) {
    units_.push_back({"lm_head", offset, embed, row});
    offset += embed;
  }
  num_params_ = offset;
  ZDP_CHECK_EQ(num_params_, llama_num_params(config_), Error, "[llama] parameter layout");
  // The order step() reads: embedding, the blocks, norm, the head.
  // The embedding's backward is all weight part (it has no input gradient).
  ops_.push_back({0, 0, "embedding", /*backward_reads_params=*/false, /*token_embedding=*/true,
                  /*weight_grad_apart=*/true});
  // Read in place from bf16, a block widens its two norms' gains and its
  // q, k and v biases where it has them; the final norm its gain.
  const size_t C = row, d = config_.head_dim;
  const size_t qkv_biases = config_.qkv_bias ? (size_t(config_.heads) + 2 * size_t(config_.kv_heads)) * d : 0;
  for (int l = 0; l < L; ++l) {
    ops_.push_back({1 + l, l, fmt::format("block{}", l)});
    ops_.back().bf16_widened = 2 * C + qkv_biases;
  }
  ops_.push_back({L + 1, 0, "norm"});
  ops_.back().bf16_widened = C;
  ops_.push_back({head_unit(), 0, "lm_head", /*backward_reads_params=*/true, /*token_embedding=*/false,
                  /*weight_grad_apart=*/true});
}

ModelConfig Llama::config() const { return llama_model_config("custom", config_); }

void Llama::next_token_logits(std::span<const float> params, Workspace& base, int pos, std::span<float> logits) const {
  ZDP_CHECK_EQ(params.size(), num_params_, ShapeError, "[llama] next_token_logits: parameter buffer size");
  ZDP_CHECK_EQ(logits.size(), size_t(config_.vocab), ShapeError, "[llama] next_token_logits: logits size");
  LlamaWorkspace& ws = as_llama(base);
  ZDP_CHECK(pos >= 0 && pos < ws.seq_len() && ws.micro_batch() == 1, ShapeError,
            "[llama] next_token_logits: position {} outside a one-sequence window of {}", pos, ws.seq_len());
  for (size_t i = 0; i + 1 < ops_.size(); ++i) forward(static_cast<int>(i), unit_span(params, ops_[i].unit), ws);
  const int C = config_.hidden, V = config_.vocab;
  const std::span<const float> last = ws.xf().subspan(size_t(pos) * C, C);  // [1, C]
  kernels::linear_forward(logits, last, unit_span(params, head_unit()).first(size_t(V) * C), {}, {1, C, V});
}

std::string Llama::describe() const { return fmt::format("{} ({} parameters)", config_.describe(), num_params_); }

Llama::Step Llama::step(int op_index) const {
  const int L = config_.layers;
  if (op_index == 0) return Step::kEmbedding;
  if (op_index <= L) return Step::kBlock;
  return op_index == L + 1 ? Step::kFinalNorm : Step::kLmHead;
}

std::vector<TensorInfo> Llama::tensors() const {
  const int C = config_.hidden, V = config_.vocab, F = config_.intermediate;
  const int Dq = config_.heads * config_.head_dim, Dkv = config_.kv_heads * config_.head_dim;
  const TensorInit matrix = TensorInit::normal(0.02), one = TensorInit::constant(1.0f),
                   zero = TensorInit::constant(0.0f);
  std::vector<TensorInfo> t;
  t.push_back({"model.embed_tokens.weight", 0, size_t(V) * C, {V, C}, true, matrix});
  for (int l = 0; l < config_.layers; ++l) {
    const size_t base = units_[1 + l].offset;
    const std::string p = fmt::format("model.layers.{}.", l);
    const LlamaBlockLayout& b = layout_;
    auto add = [&](const std::string& name, size_t at, std::vector<int> shape, bool decay, TensorInit init) {
      size_t count = 1;
      for (int d : shape) count *= size_t(d);
      t.push_back({p + name, base + at, count, std::move(shape), decay, init});
    };
    add("input_layernorm.weight", b.input_norm, {C}, false, one);
    add("self_attn.q_proj.weight", b.q, {Dq, C}, true, matrix);
    if (config_.qkv_bias) add("self_attn.q_proj.bias", b.q_bias, {Dq}, false, zero);
    add("self_attn.k_proj.weight", b.k, {Dkv, C}, true, matrix);
    if (config_.qkv_bias) add("self_attn.k_proj.bias", b.k_bias, {Dkv}, false, zero);
    add("self_attn.v_proj.weight", b.v, {Dkv, C}, true, matrix);
    if (config_.qkv_bias) add("self_attn.v_proj.bias", b.v_bias, {Dkv}, false, zero);
    add("self_attn.o_proj.weight", b.o, {C, Dq}, true, matrix);
    add("post_attention_layernorm.weight", b.post_norm, {C}, false, one);
    add("mlp.gate_proj.weight", b.gate, {F, C}, true, matrix);
    add("mlp.up_proj.weight", b.up, {F, C}, true, matrix);
    add("mlp.down_proj.weight", b.down, {C, F}, true, matrix);
  }
  t.push_back({"model.norm.weight", units_[config_.layers + 1].offset, size_t(C), {C}, false, one});
  if (!config_.tied) t.push_back({"lm_head.weight", units_.back().offset, size_t(V) * C, {V, C}, true, matrix});
  return t;
}

std::unique_ptr<Workspace> Llama::make_workspace(int micro_batch, int seq_len, bool checkpointing) const {
  return std::make_unique<LlamaWorkspace>(config_, micro_batch, seq_len, checkpointing);
}

std::unique_ptr<Workspace> Llama::make_workspace_for(const WorkspaceOptions& o) const {
  return std::make_unique<LlamaWorkspace>(config_, o.micro_batch, o.seq_len, o.checkpointing, o.bf16_product_inputs);
}

void Llama::forward_unit(int op_index, UnitParams params, Workspace& base) const {
  ZDP_CHECK(op_index >= 0 && size_t(op_index) < ops_.size(), ShapeError, "[llama] op {} out of range [0, {})", op_index,
            ops_.size());
  ZDP_CHECK_EQ(params.size(), units_[ops_[op_index].unit].count, ShapeError, "[llama] forward: parameter span size");
  LlamaWorkspace& ws = as_llama(base);
  const int N = ws.rows(), C = config_.hidden, V = config_.vocab;
  kernels::Profile* prof = ws.profile();
  switch (step(op_index)) {
    case Step::kEmbedding: {
      ScopedKernelTimer t(prof, KernelKind::kEmbedding);
      const std::span<float> x = ws.resid(0);
      const std::span<const int32_t> ids = ws.tokens();
      for (int i = 0; i < N; ++i) {
        const size_t row = size_t(ids[i]) * C;
        if (params.is_bf16()) {
          convert(params.bf16().subspan(row, C), x.subspan(size_t(i) * C, C));  // exact
        } else {
          std::copy_n(params.fp32().subspan(row, C).begin(), C, x.subspan(size_t(i) * C, C).begin());
        }
      }
      break;
    }
    case Step::kBlock: {
      const int l = ops_[op_index].layer;
      detail::llama_block_forward(config_, layout_, params, ws.resid(l), ws.layer(l), ws.resid(l + 1), ws);
      break;
    }
    case Step::kFinalNorm: {
      ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
      kernels::rmsnorm_forward(ws.xf(), ws.rstdf(), ws.resid(config_.layers), params.vector(0, params.size()), N, C,
                               static_cast<float>(config_.norm_eps));
      break;
    }
    case Step::kLmHead: {
      ZDP_CHECK(ws.has_targets(), ConfigError, "[llama] the LM head needs targets: pass them in the Batch");
      const kernels::LinearShape s{N, C, V};
      {
        ScopedKernelTimer t(prof, KernelKind::kMatmul, kernels::linear_flops(s));
        kernels::linear_forward(ws.probs(), ws.xf(), params.matrix(0, params.size()), {}, s);
      }
      // Softmax, loss and d(mean loss)/d(logits) in one pass per row, the
      // mean over the unmasked targets; the engine's loss-gradient scale
      // rides on backward's GEMM alpha.
      ScopedKernelTimer t(prof, KernelKind::kSoftmaxXent);
      ws.set_loss(kernels::softmax_xent_fused(ws.probs(), ws.losses(), ws.targets(),
                                              kernels::mean_dloss(N - ws.masked_targets()), {N, V, V}));
      ws.set_head_forward_done(true);
      break;
    }
  }
}

void Llama::backward_unit(int op_index, UnitParams params, std::span<float> grads, Workspace& base) const {
  check_backward_spans(op_index, params.size(), grads.size());
  LlamaWorkspace& ws = as_llama(base);
  const int N = ws.rows(), C = config_.hidden;
  kernels::Profile* prof = ws.profile();
  switch (step(op_index)) {
    case Step::kLmHead: {
      backward_input_unit(op_index, params, ws);
      backward_weights(op_index, grads, ws);
      break;
    }
    case Step::kFinalNorm: {
      ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
      std::fill(ws.dresid().begin(), ws.dresid().end(), 0.0f);
      kernels::rmsnorm_backward(ws.dresid(), grads, ws.dn(), ws.resid(config_.layers), params.vector(0, params.size()),
                                ws.rstdf(), N, C);
      break;
    }
    case Step::kBlock: {
      const int l = ops_[op_index].layer;
      LlamaActs& acts = ws.layer(l);
      if (ws.checkpointing()) {
        // Recompute this block's activations from its stored input; the
        // output lands in resid(l+1) again with the same bits.
        detail::llama_block_forward(config_, layout_, params, ws.resid(l), acts, ws.resid(l + 1), ws);
      }
      detail::llama_block_backward(config_, layout_, params, grads, ws.resid(l), acts, ws);
      break;
    }
    case Step::kEmbedding: {
      backward_weights(op_index, grads, ws);
      break;
    }
  }
}

// The two parts of the embedding's and the LM head's backward. probs()
// holds d(mean loss)/d(logits) from the fused forward, and keeps it until the
// head's weight part has run (nothing else of the backward writes it, nor
// the final norm's output). The embedding has no input part; its weight
// part scatters d(resid 0) into the token rows.
void Llama::backward_input_unit(int op_index, UnitParams params, Workspace& base) const {
  LlamaWorkspace& ws = split_backward_workspace(op_index, base);
  if (step(op_index) == Step::kEmbedding) return;
  const kernels::LinearShape s{ws.rows(), config_.hidden, config_.vocab};
  ZDP_CHECK_EQ(params.size(), size_t(s.out) * s.in, ShapeError, "[llama] LM head backward: parameter span size");
  ScopedKernelTimer t(ws.profile(), KernelKind::kMatmul, kernels::linear_flops(s));
  kernels::linear_backward_input(ws.dn(), ws.probs(), params.matrix(0, params.size()), s, false, ws.loss_grad_scale());
}

void Llama::backward_weights(int op_index, std::span<float> grads, Workspace& ws) const {
  split_backward_workspace(op_index, ws);  // the op first, then the span
  ZDP_CHECK_EQ(grads.size(), size_t(config_.vocab) * config_.hidden, ShapeError,
               "[llama] embedding or LM head backward: gradient span size");
  backward_weights_rows(op_index, 0, grads, ws);
}

void Llama::backward_weights_rows(int op_index, size_t first_row, std::span<float> rows, Workspace& base) const {
  LlamaWorkspace& ws = split_backward_workspace(op_index, base);
  const size_t C = config_.hidden, V = config_.vocab;
  ZDP_CHECK(rows.size() % C == 0 && first_row + rows.size() / C <= V, ShapeError,
            "[llama] {} gradient elements from row {} are not whole rows of the {} x {} embedding", rows.size(),
            first_row, V, C);
  if (step(op_index) == Step::kEmbedding) {
    ScopedKernelTimer t(ws.profile(), KernelKind::kEmbedding);
    kernels::embedding_backward_rows(rows, first_row, V, ws.dresid(), ws.tokens(),
                                     {ws.micro_batch(), ws.seq_len(), config_.hidden, config_.vocab});
    return;
  }
  const kernels::LinearShape s{ws.rows(), config_.hidden, config_.vocab};
  ScopedKernelTimer t(ws.profile(), KernelKind::kMatmul,
                      kernels::linear_flops(s) * static_cast<double>(rows.size()) / static_cast<double>(C * V));
  kernels::linear_backward_weight_rows(rows, first_row, ws.probs(), ws.xf(), s, ws.loss_grad_scale());
}

LlamaWorkspace& Llama::split_backward_workspace(int op_index, Workspace& base) const {
  ZDP_CHECK(op_index >= 0 && size_t(op_index) < ops_.size() &&
                (step(op_index) == Step::kLmHead || step(op_index) == Step::kEmbedding),
            ConfigError, "[llama] op {} has no backward in two parts: only the embedding's and the LM head's",
            op_index);
  LlamaWorkspace& ws = as_llama(base);
  ZDP_CHECK(step(op_index) != Step::kLmHead || ws.head_forward_done(), ConfigError,
            "[llama] LM head backward without its forward: run forward on this micro-batch first");
  return ws;
}

std::vector<kernels::LinearShape> Llama::linear_shapes(int micro_batch, int seq_len) const {
  const int rows = micro_batch * seq_len, C = config_.hidden, F = config_.intermediate, d = config_.head_dim;
  const int Dq = config_.heads * d, Dkv = config_.kv_heads * d;
  return {{rows, C, Dq}, {rows, C, Dkv},           {rows, Dq, C},         {rows, C, F},
          {rows, F, C},  {rows, C, config_.vocab}, {seq_len, d, seq_len}, {seq_len, seq_len, d}};
}

double Llama::train_flops_per_position(int seq_len) const {
  const double C = config_.hidden, F = config_.intermediate, V = config_.vocab, L = config_.layers;
  const double Dq = double(config_.heads) * config_.head_dim, Dkv = double(config_.kv_heads) * config_.head_dim;
  const double matmul = L * (2 * C * Dq + 2 * C * Dkv + 3 * C * F) + V * C;
  return 6 * matmul + 12 * L * seq_len * Dq;
}

}  // namespace zerodp::model
