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
  // The tied embedding's rows (wte's, then wpe's) are C elements each: its
  // gradient can be made a few rows at a time (backward_weights_rows).
  units_.push_back({"embedding", offset, embedding_unit_params(config_), size_t(config_.channels)});
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
  // The embedding's backward is all weight part (it has no input gradient).
  ops_.push_back({0, 0, "embedding", /*backward_reads_params=*/false, /*token_embedding=*/true,
                  /*weight_grad_apart=*/true});
  // Read in place from bf16, a block widens its layernorms' gains and
  // biases and its linears' biases (13 C floats), ln_f its gain and bias.
  const size_t C = config_.channels;
  for (int l = 0; l < L; ++l) {
    ops_.push_back({1 + l, l, fmt::format("block{}", l)});
    ops_.back().bf16_widened = 13 * C;
  }
  ops_.push_back({L + 1, 0, "ln_f"});
  ops_.back().bf16_widened = 2 * C;
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

void Gpt::forward_unit(int op_index, UnitParams params, Workspace& base) const {
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
      const kernels::EmbeddingShape shape{ws.micro_batch(), ws.seq_len(), C, config_.vocab};
      if (params.is_bf16()) {
        kernels::embedding_forward(ws.resid(0), ws.tokens(), params.bf16().subspan(0, wte_size),
                                   params.bf16().subspan(wte_size), shape);
      } else {
        kernels::embedding_forward(ws.resid(0), ws.tokens(), params.fp32().subspan(0, wte_size),
                                   params.fp32().subspan(wte_size), shape);
      }
      break;
    }
    case Step::kBlock: {
      const int l = op.layer;
      detail::block_forward(config_, layout_, params, ws.resid(l), ws.layer(l), ws.resid(l + 1), ws);
      break;
    }
    case Step::kFinalNorm: {
      ScopedKernelTimer t(prof, KernelKind::kLayerNorm);
      kernels::layernorm_forward(ws.lnf(), ws.lnf_mean(), ws.lnf_rstd(), ws.resid(config_.layers), params.vector(0, C),
                                 params.vector(C, C), N, C);
      break;
    }
    case Step::kLmHead: {
      ZDP_CHECK(ws.has_targets(), ConfigError, "[gpt] the LM head needs targets: pass them in the Batch");
      const kernels::LinearShape s{N, C, config_.padded_vocab};
      {
        ScopedKernelTimer t(prof, KernelKind::kMatmul, kernels::linear_flops(s));
        kernels::linear_forward(ws.probs(), ws.lnf(), params.matrix(0, wte_size), {}, s);
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

void Gpt::backward_unit(int op_index, UnitParams params, std::span<float> grads, Workspace& base) const {
  check_backward_spans(op_index, params.size(), grads.size());
  const Op& op = ops_[op_index];
  GptWorkspace& ws = as_gpt(base);
  const int N = ws.rows();
  const int C = config_.channels;
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
      kernels::layernorm_backward(ws.dresid(), grads.subspan(0, C), grads.subspan(C, C), ws.dln(),
                                  ws.resid(config_.layers), params.vector(0, C), ws.lnf_mean(), ws.lnf_rstd(), N, C);
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
      backward_weights(op_index, grads, ws);
      break;
    }
  }
}

// The two parts of the embedding's and the LM head's backward. probs()
// holds d(mean loss)/d(logits) from the fused forward, and keeps it until the
// head's weight part has run (nothing else of the backward writes it, nor
// the final norm's output). The embedding has no input part; its weight
// part scatters d(resid 0) into the rows of wte and wpe.
void Gpt::backward_input_unit(int op_index, UnitParams params, Workspace& base) const {
  GptWorkspace& ws = split_backward_workspace(op_index, base);
  if (step(op_index) == Step::kEmbedding) return;
  const kernels::LinearShape s{ws.rows(), config_.channels, config_.padded_vocab};
  ZDP_CHECK_EQ(params.size(), units_[0].count, ShapeError, "[gpt] LM head backward: parameter span size");
  ScopedKernelTimer t(ws.profile(), KernelKind::kMatmul, kernels::linear_flops(s));
  kernels::linear_backward_input(ws.dln(), ws.probs(), params.matrix(0, size_t(s.out) * s.in), s, false,
                                 ws.loss_grad_scale());
}

void Gpt::backward_weights(int op_index, std::span<float> grads, Workspace& ws) const {
  split_backward_workspace(op_index, ws);  // the op first, then the span
  ZDP_CHECK_EQ(grads.size(), units_[0].count, ShapeError, "[gpt] embedding or LM head backward: gradient span size");
  backward_weights_rows(op_index, 0, grads, ws);
}

void Gpt::backward_weights_rows(int op_index, size_t first_row, std::span<float> rows, Workspace& base) const {
  GptWorkspace& ws = split_backward_workspace(op_index, base);
  const size_t C = config_.channels, Vp = config_.padded_vocab;
  ZDP_CHECK(rows.size() % C == 0 && first_row * C + rows.size() <= units_[0].count, ShapeError,
            "[gpt] {} gradient elements from row {} are not whole rows of the embedding unit's {}", rows.size(),
            first_row, units_[0].count / C);
  if (step(op_index) == Step::kEmbedding) {
    ScopedKernelTimer t(ws.profile(), KernelKind::kEmbedding);
    kernels::embedding_backward_rows(rows, first_row, Vp, ws.dresid(), ws.tokens(),
                                     {ws.micro_batch(), ws.seq_len(), config_.channels, config_.vocab});
    return;
  }
  if (first_row >= Vp) return;  // wpe's rows: the head does not read them
  const size_t head_rows = std::min(Vp, first_row + rows.size() / C) - first_row;
  const kernels::LinearShape s{ws.rows(), config_.channels, config_.padded_vocab};
  ScopedKernelTimer t(ws.profile(), KernelKind::kMatmul,
                      kernels::linear_flops(s) * static_cast<double>(head_rows) / static_cast<double>(Vp));
  kernels::linear_backward_weight_rows(rows.first(head_rows * C), first_row, ws.probs(), ws.lnf(), s,
                                       ws.loss_grad_scale());
}

GptWorkspace& Gpt::split_backward_workspace(int op_index, Workspace& base) const {
  ZDP_CHECK(op_index >= 0 && size_t(op_index) < ops_.size() &&
                (step(op_index) == Step::kLmHead || step(op_index) == Step::kEmbedding),
            ConfigError, "[gpt] op {} has no backward in two parts: only the embedding's and the LM head's", op_index);
  GptWorkspace& ws = as_gpt(base);
  ZDP_CHECK(step(op_index) != Step::kLmHead || ws.head_forward_done(), ConfigError,
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
