// SPDX-License-Identifier: Apache-2.0
// One rank's mutable state for a Llama-family model: the micro-batch's
// tokens, the activations backward needs, the scratch for activation
// gradients and the RoPE table of the workspace's T positions. The tensors
// are carved from one arena (model/workspace_arena.h); what each holds and
// why is in model/llama_family.h (the planner's list is the same list).
//
// Without checkpointing every block keeps its LlamaActs. With checkpointing
// only the residual stream (each block's input) is kept and one LlamaActs is
// shared: a block's backward first recomputes its forward into it.
// With bf16 product inputs (and no checkpointing) each block keeps n1, q, k,
// v, y, n2 and m as bf16 operands (model/product_inputs.h).
// Thread-safety: used by one thread at a time.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "kernels/rope.h"
#include "model/llama_config.h"
#include "model/model.h"

namespace zerodp::model {

// What one decoder block keeps for backward (N = B*T, Dq = H*d, Dkv = Hkv*d, F = intermediate).
struct LlamaActs {
  std::span<float> n1;     // [N, C]    input_layernorm output
  std::span<float> rstd1;  // [N]
  std::span<float> q;      // [N, Dq]   after RoPE
  std::span<float> k;      // [N, Dkv]  after RoPE
  std::span<float> v;      // [N, Dkv]
  std::span<float> att;    // [B, H, T, T] softmax probabilities
  std::span<float> y;      // [N, Dq]   attention output (heads side by side)
  std::span<float> h;      // [N, C]    x + o_proj(y)
  std::span<float> n2;     // [N, C]    post_attention_layernorm output
  std::span<float> rstd2;  // [N]
  std::span<float> gate;   // [N, F]
  std::span<float> up;     // [N, F]
  std::span<float> m;      // [N, F]    silu(gate) * up
  // With bf16 product inputs (WorkspaceOptions): the kept copies of the
  // seven tensors only matrix products read, whose fp32 spans above are then
  // four working buffers every block shares (n1, y and m in the first, q and
  // n2 in the second, k and v in one each: never live at once). Empty
  // otherwise.
  std::span<BFloat16> n1_kept, q_kept, k_kept, v_kept, y_kept, n2_kept, m_kept;
};

class LlamaWorkspace final : public Workspace {
 public:
  LlamaWorkspace(const LlamaConfig& config, int micro_batch, int seq_len, bool checkpointing,
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
  const kernels::RopeTable& rope() const { return rope_; }
  // Packed records (Batch::segments): each position's segment start and its
  // position inside its record, [N]; empty without segments (plain causal
  // attention, position t).
  std::span<const int32_t> seg_start() const { return seg_start_; }
  std::span<const int32_t> positions() const { return positions_; }

  // Residual stream: resid(0) = embeddings, resid(l+1) = output of block l.  [N, C]
  std::span<float> resid(int i) { return resid_[i]; }
  // Block l's activations (the shared recompute set when checkpointing).
  LlamaActs& layer(int l) { return checkpointing_ ? layers_[0] : layers_[l]; }
  std::span<float> xf() { return xf_; }        // [N, C] final norm output
  std::span<float> rstdf() { return rstdf_; }  // [N]
  std::span<float> probs() { return probs_; }  // [N, V] logits, then d(mean loss)/d(logits)
  std::span<float> losses() { return losses_; }

  // Activation-gradient scratch, one block's worth, reused across blocks.
  std::span<float> dresid() { return dresid_; }  // [N, C]  d(loss)/d(residual stream)
  std::span<float> dn() { return dn_; }          // [N, C]  d(loss)/d(a norm's output)
  std::span<float> dy() { return dy_; }          // [N, Dq]
  std::span<float> dq() { return dq_; }          // [N, Dq]
  std::span<float> dk() { return dk_; }          // [N, Dkv]
  std::span<float> dv() { return dv_; }          // [N, Dkv]
  std::span<float> dm() { return dm_; }          // [N, F]
  std::span<float> dgate() { return dgate_; }    // [N, F]
  std::span<float> dup() { return dup_; }        // [N, F]
  std::span<float> datt() { return datt_; }      // [T, T]

  void set_loss(float loss) { loss_ = loss; }
  void set_head_forward_done(bool done) { head_forward_done_ = done; }
  bool head_forward_done() const { return head_forward_done_; }

 private:
  int batch_, seq_;
  bool checkpointing_;
  LlamaConfig config_;
  std::vector<int32_t> tokens_, targets_;
  std::vector<int32_t> seg_start_, positions_;
  bool has_targets_ = false;
  float loss_ = 0.0f;
  bool head_forward_done_ = false;
  kernels::RopeTable rope_;
  AlignedBuffer<float> arena_;
  size_t activation_bytes_ = 0, scratch_bytes_ = 0;
  std::vector<std::span<float>> resid_;
  std::vector<LlamaActs> layers_;
  std::span<float> xf_, rstdf_, probs_, losses_;
  std::span<float> dresid_, dn_, dy_, dq_, dk_, dv_, dm_, dgate_, dup_, datt_;
};

// The RoPE configuration of a Llama config (kernels/rope.h).
kernels::RopeConfig llama_rope_config(const LlamaConfig& config);

}  // namespace zerodp::model
