// SPDX-License-Identifier: Apache-2.0
// One rank's mutable state for a Gpt: the micro-batch's tokens, the
// activations backward needs, and the scratch for activation gradients. All
// tensors are carved from one 64-byte-aligned arena allocated up front, each
// slice 64-byte aligned (so recomputed and stored activations see the same
// alignment and the same GEMM code paths: bitwise-equal results).
//
// A pipeline stage's workspace (GptPart) holds only its blocks' activations,
// the residual stream at its ends, and the head's buffers where the head is
// in the stage.
// Without checkpointing every block keeps its LayerActs. With checkpointing
// only the residual stream (each block's input) is kept and one LayerActs is
// shared: a block's backward first recomputes its forward into it.
// With bf16 product inputs (and no checkpointing) each block keeps ln1, qkv,
// attention output, ln2 and GELU output as bf16 operands and computes them
// in two shared fp32 working buffers (LayerActs).
// Thread-safety: used by one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "model/gpt_config.h"
#include "model/model.h"

namespace zerodp::model {

// What one transformer block keeps for backward (N = B*T).
struct LayerActs {
  std::span<float> ln1;       // [N, C]   ln_1 output
  std::span<float> ln1_mean;  // [N]
  std::span<float> ln1_rstd;  // [N]
  std::span<float> qkv;       // [N, 3C]
  std::span<float> att;       // [B, NH, T, T] softmax probabilities
  std::span<float> atty;      // [N, C]   attention output before the projection
  std::span<float> res2;      // [N, C]   x + attn(ln_1(x))
  std::span<float> ln2;       // [N, C]
  std::span<float> ln2_mean;  // [N]
  std::span<float> ln2_rstd;  // [N]
  std::span<float> fch;       // [N, 4C]  fc output (GELU input)
  std::span<float> fch_gelu;  // [N, 4C]
  // With bf16 product inputs (WorkspaceOptions): the kept copies of the
  // five tensors only matrix products read, whose fp32 spans above are then
  // two working buffers every block shares (ln1, atty and fch_gelu in one,
  // qkv and ln2 in the other: never live at once). Empty otherwise.
  std::span<BFloat16> ln1_kept, qkv_kept, atty_kept, ln2_kept, fch_gelu_kept;
};

// The part of the model a workspace serves: blocks [first_layer, end_layer)
// (end_layer -1: through the last), and the final norm with the head or not.
struct GptPart {
  int first_layer = 0;
  int end_layer = -1;
  bool head = true;
};

class GptWorkspace final : public Workspace {
 public:
  GptWorkspace(const GptConfig& config, int micro_batch, int seq_len, bool checkpointing, GptPart part = {},
               bool bf16_product_inputs = false);

  void set_batch(const Batch& batch) override;
  float loss() const override { return loss_; }
  size_t activation_bytes() const override { return activation_bytes_; }
  size_t scratch_bytes() const override { return scratch_bytes_; }
  int micro_batch() const override { return batch_; }
  int seq_len() const override { return seq_; }
  bool checkpointing() const override { return checkpointing_; }

  int rows() const { return batch_ * seq_; }  // N = B*T
  std::span<const int32_t> tokens() const { return tokens_; }
  std::span<const int32_t> targets() const { return targets_; }
  bool has_targets() const { return has_targets_; }

  // Residual stream: resid(0) = embeddings, resid(l+1) = output of block l.  [N, C]
  // (i in [first_layer, end_layer] of the part)
  std::span<float> resid(int i) { return resid_[static_cast<size_t>(i - part_.first_layer)]; }
  // Block l's activations (the shared recompute set when checkpointing).
  LayerActs& layer(int l) { return checkpointing_ ? layers_[0] : layers_[static_cast<size_t>(l - part_.first_layer)]; }
  std::span<float> lnf() { return lnf_; }            // [N, C]
  std::span<float> lnf_mean() { return lnf_mean_; }  // [N]
  std::span<float> lnf_rstd() { return lnf_rstd_; }  // [N]
  std::span<float> probs() { return probs_; }        // [N, Vp] logits, then d(mean loss)/d(logits)
  std::span<float> losses() { return losses_; }      // [N]

  // Activation-gradient scratch, one block's worth, reused across blocks.
  std::span<float> dresid() { return dresid_; }        // [N, C]  d(loss)/d(residual stream)
  std::span<float> dln() { return dln_; }              // [N, C]
  std::span<float> datty() { return datty_; }          // [N, C]
  std::span<float> dqkv() { return dqkv_; }            // [N, 3C]
  std::span<float> dfch_gelu() { return dfch_gelu_; }  // [N, 4C]
  std::span<float> dfch() { return dfch_; }            // [N, 4C]
  std::span<float> datt() { return datt_; }            // [T, T]

  void set_loss(float loss) { loss_ = loss; }
  void set_head_forward_done(bool done) { head_forward_done_ = done; }
  bool head_forward_done() const { return head_forward_done_; }

 private:
  int batch_, seq_;
  bool checkpointing_;
  GptConfig config_;
  GptPart part_;
  std::vector<int32_t> tokens_, targets_;
  bool has_targets_ = false;
  float loss_ = 0.0f;
  bool head_forward_done_ = false;

  AlignedBuffer<float> arena_;
  size_t activation_bytes_ = 0, scratch_bytes_ = 0;
  std::vector<std::span<float>> resid_;
  std::vector<LayerActs> layers_;
  std::span<float> lnf_, lnf_mean_, lnf_rstd_, probs_, losses_;
  std::span<float> dresid_, dln_, datty_, dqkv_, dfch_gelu_, dfch_, datt_;
};

}  // namespace zerodp::model
