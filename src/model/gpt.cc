// SPDX-License-Identifier: Apache-2.0
#include "model/gpt.h"

#include <fmt/format.h>
#include <cmath>

#include <algorithm>

#include "core/error.h"
#include "kernels/embedding.h"
#include "kernels/layernorm.h"
#include "kernels/linear.h"
#include "kernels/softmax_xent.h"
#include "model/gpt_block.h"
#include "model/gpt_family.h"
#include "model/gpt_workspace.h"

namespace zerodp::model {

using kernels::KernelKind;
using kernels::ScopedKernelTimer;

namespace {

GptWorkspace& as_gpt(Workspace& ws) {
  auto* g = dynamic_cast<GptWorkspace*>(&ws);
  ZDP_CHECK(g != nullptr, ConfigError, "[gpt] the workspace was not made by a Gpt model");
  return *g;
}

}  // namespace

ModelConfig Gpt::config() const { return gpt_model_config("custom", config_); }

Gpt::Step Gpt::step(int op_index) const {
  const int L = config_.layers;
  if (op_index == 0) return Step::kEmbedding;
  if (op_index <= L) return Step::kBlock;
  return op_index == L + 1 ? Step::kFinalNorm : Step::kLmHead;
}

Gpt::Gpt(const GptConfig& config) : config_(config), layout_(block_layout(config.channels)) {
  config_.validate();
  const int L = config_.layers;
  size_t offset = 0;
  units_.push_back({"embedding", offset, embedding_unit_params(config_)});
  offset += units_.back().count;
  for (int l = 0; l < L; ++l) {
    units_.push_back({fmt::format("block{}", l), offset, layout_.count});
    offset += layout_.count;
  }
  units_.push_back({"ln_f", offset, 2 * size_t(config_.channels)});
  offset += units_.back().count;
  num_params_ = offset;
  ZDP_CHECK_EQ(num_params_, gpt_num_params(config_), Error, "[gpt] parameter layout");

  // The order step() reads: embedding, the blocks, ln_f, the tied head.
  ops_.push_back({0, 0, "embedding", /*backward_reads_params=*/false, /*token_embedding=*/true});
  for (int l = 0; l < L; ++l) ops_.push_back({1 + l, l, fmt::format("block{}", l)});
  ops_.push_back({L + 1, 0, "ln_f"});
  ops_.push_back(
      {0, 0, "lm_head", /*backward_reads_params=*/true, /*token_embedding=*/false, /*weight_grad_apart=*/true});
}

std::vector<TensorInfo> Gpt::tensors() const {
  const int C = config_.channels;
  // GPT-2's initialisation (as llm.c and nanoGPT): N(0, 0.02) for the
  // embeddings and matrices, with the residual projections scaled by
  // 1/sqrt(2L); zero biases, unit layernorm gains, zero padded vocab rows.
  const double std_base = 0.02;
  const double std_resid = 0.02 / std::sqrt(2.0 * config_.layers);
  std::vector<TensorInfo> t;
  auto add = [&t](std::string name, size_t offset, std::vector<int> shape, TensorInit init) {
    size_t count = 1;
    for (int d : shape) count *= size_t(d);
    const bool decay = shape.size() == 2;
    t.push_back({std::move(name), offset, count, std::move(shape), decay, init});
  };
  const TensorInit zeros = TensorInit::constant(0.0f), ones = TensorInit::constant(1.0f);
  add("wte", 0, {config_.padded_vocab, C}, TensorInit::normal(std_base, size_t(config_.vocab) * C));
  add("wpe", size_t(config_.padded_vocab) * C, {config_.max_seq_len, C}, TensorInit::normal(std_base));
  const BlockLayout& b = layout_;
  for (int l = 0; l < config_.layers; ++l) {
    const size_t u = units_[1 + l].offset;
    const std::string p = fmt::format("block{}.", l);
    add(p + "ln1w", u + b.ln1w, {C}, ones);
    add(p + "ln1b", u + b.ln1b, {C}, zeros);
    add(p + "qkvw", u + b.qkvw, {3 * C, C}, TensorInit::normal(std_base));
    add(p + "qkvb", u + b.qkvb, {3 * C}, zeros);
    add(p + "attprojw", u + b.attprojw, {C, C}, TensorInit::normal(std_resid));
    add(p + "attprojb", u + b.attprojb, {C}, zeros);
    add(p + "ln2w", u + b.ln2w, {C}, ones);
    add(p + "ln2b", u + b.ln2b, {C}, zeros);
    add(p + "fcw", u + b.fcw, {4 * C, C}, TensorInit::normal(std_base));
    add(p + "fcb", u + b.fcb, {4 * C}, zeros);
    add(p + "fcprojw", u + b.fcprojw, {C, 4 * C}, TensorInit::normal(std_resid));
    add(p + "fcprojb", u + b.fcprojb, {C}, zeros);
  }
  add("ln_f.w", units_.back().offset, {C}, ones);
  add("ln_f.b", units_.back().offset + C, {C}, zeros);
  return t;
}

void Gpt::next_token_logits(std::span<const float> params, Workspace& base, int pos, std::span<float> logits) const {
  ZDP_CHECK_EQ(params.size(), num_params_, ShapeError, "[gpt] next_token_logits: parameter buffer size");
  ZDP_CHECK_EQ(logits.size(), size_t(config_.vocab), ShapeError, "[gpt] next_token_logits: logits size");
  GptWorkspace& ws = as_gpt(base);
  ZDP_CHECK(pos >= 0 && pos < ws.seq_len() && ws.micro_batch() == 1, ShapeError,
            "[gpt] next_token_logits: position {} outside a one-sequence window of {}", pos, ws.seq_len());
  for (size_t i = 0; i + 1 < ops_.size(); ++i) forward(static_cast<int>(i), unit_span(params, ops_[i].unit), ws);
  const int C = config_.channels, Vp = config_.padded_vocab;
  std::vector<float> padded(Vp);
  const std::span<const float> last = ws.lnf().subspan(size_t(pos) * C, C);  // [1, C]
  kernels::linear_forward(padded, last, params.subspan(0, size_t(Vp) * C), {}, {1, C, Vp});
  std::copy_n(padded.begin(), config_.vocab, logits.begin());
}

std::string Gpt::describe() const { return fmt::format("{}, {} parameters", config_.describe(), num_params_); }

std::unique_ptr<Workspace> Gpt::make_workspace(int micro_batch, int seq_len, bool checkpointing) const {
  return std::make_unique<GptWorkspace>(config_, micro_batch, seq_len, checkpointing);
}

std::unique_ptr<Workspace> Gpt::make_workspace_for(const WorkspaceOptions& o) const {
  return std::make_unique<GptWorkspace>(config_, o.micro_batch, o.seq_len, o.checkpointing, GptPart{},
                                        o.bf16_product_inputs);
}

bool Gpt::can_cut_before(int op_index) const { return op_index >= 1 && op_index <= config_.layers + 1; }

std::unique_ptr<Workspace> Gpt::make_stage_workspace(const WorkspaceOptions& o, int first_op, int end_op) const {
  const int L = config_.layers, ops = static_cast<int>(ops_.size());
  ZDP_CHECK(0 <= first_op && first_op < end_op && end_op <= ops && (first_op == 0 || can_cut_before(first_op)) &&
                (end_op == ops || can_cut_before(end_op)),
            ConfigError,
            "[gpt] a stage of ops [{}, {}): a stage starts and ends at a block, the final norm or the ends", first_op,
            end_op);
  // Op 1 + l is block l; the final norm and the head always share a stage.
  const GptPart part{
      .first_layer = std::max(first_op - 1, 0), .end_layer = std::min(end_op - 1, L), .head = end_op == ops};
  return std::make_unique<GptWorkspace>(config_, o.micro_batch, o.seq_len, o.checkpointing, part,
                                        o.bf16_product_inputs);
}

std::span<float> Gpt::boundary_activation(Workspace& ws, int op_index) const {
  ZDP_CHECK(can_cut_before(op_index), ConfigError, "[gpt] no cut before op {}", op_index);
  return as_gpt(ws).resid(op_index - 1);
}

std::span<float> Gpt::boundary_gradient(Workspace& ws, int op_index) const {
  ZDP_CHECK(can_cut_before(op_index), ConfigError, "[gpt] no cut before op {}", op_index);
  return as_gpt(ws).dresid();
}

void Gpt::forward(int op_index, std::span<const float> params, Workspace& base) const {
  ZDP_CHECK(op_index >= 0 && size_t(op_index) < ops_.size(), ShapeError, "[gpt] op {} out of range [0, {})", op_index,
            ops_.size());
  const Op& op = ops_[op_index];
  ZDP_CHECK_EQ(params.size(), units_[op.unit].count, ShapeError, "[gpt] forward: parameter span size");
  GptWorkspace& ws = as_gpt(base);
  const int N = ws.rows();
  const int C = config_.channels;
  const size_t wte_size = size_t(config_.padded_vocab) * C;
  kernels::Profile* prof = ws.profile();
  switch (step(op_index)) {
    case Step::kEmbedding: {
      ScopedKernelTimer t(prof, KernelKind::kEmbedding);
      kernels::embedding_forward(ws.resid(0), ws.tokens(), params.subspan(0, wte_size), params.subspan(wte_size),
                                 {ws.micro_batch(), ws.seq_len(), C, config_.vocab});
      break;
    }
    case Step::kBlock: {
      const int l = op.layer;
      detail::block_forward(config_, layout_, params, ws.resid(l), ws.layer(l), ws.resid(l + 1), ws);
      break;
    }
    case Step::kFinalNorm: {
      ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
      kernels::layernorm_forward(ws.lnf(), ws.lnf_mean(), ws.lnf_rstd(), ws.resid(config_.layers), params.subspan(0, C),
                                 params.subspan(C, C), N, C);
      break;
    }
    case Step::kLmHead: {
      ZDP_CHECK(ws.has_targets(), ConfigError, "[gpt] the LM head needs targets: pass them in the Batch");
      const kernels::LinearShape s{N, C, config_.padded_vocab};
      {
        ScopedKernelTimer t(prof, KernelKind::kMatmul, kernels::linear_flops(s));
        kernels::linear_forward(ws.probs(), ws.lnf(), params.subspan(0, wte_size), {}, s);
      }
      // Softmax, loss and d(mean loss)/d(logits) in one pass per row, the
      // mean over the unmasked targets; the engine's loss-gradient scale is
      // applied in backward as GEMM alpha.
      ScopedKernelTimer t(prof, KernelKind::kSoftmaxXent);
      ws.set_loss(kernels::softmax_xent_fused(ws.probs(), ws.losses(), ws.targets(),
                                              kernels::mean_dloss(N - ws.masked_targets()),
                                              {N, config_.vocab, config_.padded_vocab}));
      ws.set_head_forward_done(true);
      break;
    }
  }
}

void Gpt::backward(int op_index, std::span<const float> params, std::span<float> grads, Workspace& base) const {
  check_backward_spans(op_index, params.size(), grads.size());
  const Op& op = ops_[op_index];
  GptWorkspace& ws = as_gpt(base);
  const int N = ws.rows();
  const int C = config_.channels;
  const size_t wte_size = size_t(config_.padded_vocab) * C;
  kernels::Profile* prof = ws.profile();
  switch (step(op_index)) {
    case Step::kLmHead: {
      backward_input(op_index, params, ws);
      backward_weights(op_index, grads, ws);
      break;
    }
    case Step::kFinalNorm: {
      ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
      std::fill(ws.dresid().begin(), ws.dresid().end(), 0.0f);
      kernels::layernorm_backward(ws.dresid(), grads.subspan(0, C), grads.subspan(C, C), ws.dln(),
                                  ws.resid(config_.layers), params.subspan(0, C), ws.lnf_mean(), ws.lnf_rstd(), N, C);
      break;
    }
    case Step::kBlock: {
      const int l = op.layer;
      LayerActs& acts = ws.layer(l);
      if (ws.checkpointing()) {
        // Recompute this block's activations from its stored input. The output
        // lands in resid(l+1) again with the same bits; nothing reads it now.
        detail::block_forward(config_, layout_, params, ws.resid(l), acts, ws.resid(l + 1), ws);
      }
      detail::block_backward(config_, layout_, params, grads, ws.resid(l), acts, ws);
      break;
    }
    case Step::kEmbedding: {
      ScopedKernelTimer t(prof, KernelKind::kEmbedding);
      kernels::embedding_backward(grads.subspan(0, wte_size), grads.subspan(wte_size), ws.dresid(), ws.tokens(),
                                  {ws.micro_batch(), ws.seq_len(), C, config_.vocab});
      break;
    }
  }
}

// The LM head's two parts: probs() holds d(mean loss)/d(logits) from the
// fused forward, and keeps it until the weight part has run (nothing else
// of the backward writes it, nor the final norm's output).
void Gpt::backward_input(int op_index, std::span<const float> params, Workspace& base) const {
  GptWorkspace& ws = head_backward_workspace(op_index, base);
  const kernels::LinearShape s{ws.rows(), config_.channels, config_.padded_vocab};
  ZDP_CHECK_EQ(params.size(), units_[0].count, ShapeError, "[gpt] LM head backward: parameter span size");
  ScopedKernelTimer t(ws.profile(), KernelKind::kMatmul, kernels::linear_flops(s));
  kernels::linear_backward_input(ws.dln(), ws.probs(), params.subspan(0, size_t(s.out) * s.in), s, false,
                                 ws.loss_grad_scale());
}

void Gpt::backward_weights(int op_index, std::span<float> grads, Workspace& base) const {
  GptWorkspace& ws = head_backward_workspace(op_index, base);
  const kernels::LinearShape s{ws.rows(), config_.channels, config_.padded_vocab};
  ZDP_CHECK_EQ(grads.size(), units_[0].count, ShapeError, "[gpt] LM head backward: gradient span size");
  ScopedKernelTimer t(ws.profile(), KernelKind::kMatmul, kernels::linear_flops(s));
  kernels::linear_backward({}, grads.subspan(0, size_t(s.out) * s.in), {}, ws.probs(), ws.lnf(), {}, s, false,
                           ws.loss_grad_scale());
}

GptWorkspace& Gpt::head_backward_workspace(int op_index, Workspace& base) const {
  ZDP_CHECK(op_index >= 0 && size_t(op_index) < ops_.size() && step(op_index) == Step::kLmHead, ConfigError,
            "[gpt] op {} has no backward in two parts: only the LM head's", op_index);
  GptWorkspace& ws = as_gpt(base);
  ZDP_CHECK(ws.head_forward_done(), ConfigError,
            "[gpt] LM head backward without its forward: run forward on this micro-batch first");
  return ws;
}

std::vector<kernels::LinearShape> Gpt::linear_shapes(int micro_batch, int seq_len) const {
  const int rows = micro_batch * seq_len, C = config_.channels;
  // The blocks' and the head's linears; attention's per-head products
  // (T x T scores from T x hs, and back) have a linear's three shapes too.
  return {{rows, C, 3 * C},
          {rows, C, C},
          {rows, C, 4 * C},
          {rows, 4 * C, C},
          {rows, C, config_.padded_vocab},
          {seq_len, C / config_.heads, seq_len}};
}

double Gpt::train_flops_per_position(int seq_len) const {
  const double C = config_.channels;
  const double L = config_.layers;
  const double matmul_params = L * 12.0 * C * C + double(config_.padded_vocab) * C;
  return 6.0 * matmul_params + 12.0 * L * seq_len * C;
}

}  // namespace zerodp::model
