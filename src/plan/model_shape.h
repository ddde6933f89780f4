// SPDX-License-Identifier: Apache-2.0
// The shape of a GPT model as plan needs it: Φ (the parameter count), the
// units the engine schedules (embeddings, each block, final layernorm + tied
// head) and the largest of them (stage 3 gathers the current and the
// prefetched unit), and the largest single module (DeepSpeed's estimator's
// "largest layer").
//
// GPT-2 style: tied token embedding / LM head, learned position embedding,
// pre-LN blocks with biases, GELU MLP of width 4C, a final layernorm:
//   Φ = V*C + T*C + L*(12C^2 + 13C) + 2C
// (per block: ln1 2C, qkv 3C^2+3C, attention projection C^2+C, ln2 2C,
// fc 4C^2+4C, fc projection 4C^2+C). gpt2-124m with V = 50304: 124,475,904.
//
// Shapes come from src/model (model/presets.h): its presets, the ones
// `zerodp model list` prints and `zerodp train --model` takes, and its JSON
// schema, {"kind":"gpt","layers":12,"heads":12,"channels":768,"vocab":50257,
// "max_seq_len":1024} (vocab padded as the engine stores it). There is no
// second list or schema here.
// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/gpt_config.h"

namespace zerodp::plan {

struct GptShape {
  int layers = 0;    // L
  int heads = 0;     // H
  int channels = 0;  // C
  int vocab = 0;     // V (padded, as stored)
  int context = 0;   // T, the longest sequence (rows of the position embedding)

  // Throws ConfigError unless every field is positive and C % H == 0.
  void validate() const;

  uint64_t num_params() const;        // Φ
  uint64_t embedding_params() const;  // wte + wpe: V*C + T*C
  uint64_t block_params() const;      // 12C^2 + 13C
  uint64_t final_params() const;      // final layernorm: 2C (the head is tied to wte)

  // Forward and backward FLOPs of one micro-batch of `micro_batch` x
  // `seq_len` tokens (the backward twice the forward): a block's matrix
  // products and attention, (72C^2 + 12TC) per token, and the tied LM
  // head's, 6VC per token. The step-time model and the pipeline's cut
  // count by these.
  double block_train_flops(int micro_batch, int seq_len) const;
  double head_train_flops(int micro_batch, int seq_len) const;

  // A unit of the engine's schedule and the elements stage 3 must gather to
  // run it (the unit itself: the tied LM head is a second op on the
  // embedding unit, which the engine gathers again, whole).
  struct Unit {
    std::string name;
    uint64_t owned_params = 0;     // parameters this unit owns in the flat buffer
    uint64_t gathered_params = 0;  // parameters it needs resident to run
  };
  std::vector<Unit> units() const;

  // max over units of gathered_params: the size of each of stage 3's gather
  // buffers and of the fp32 compute copy.
  uint64_t largest_unit_params() const;

  // The largest single module's parameters (weight + bias), as DeepSpeed's
  // model_to_params counts "largest_layer_params": max(wte V*C, wpe T*C,
  // fc 4C^2+4C, ...).
  uint64_t largest_module_params() const;
};

// src/model's GPT config as plan's shape: wte has the padded vocab's rows,
// wpe max_seq_len rows.
GptShape gpt_shape(const model::GptConfig& config);

// The shape of src/model's GPT preset `name`; nullopt for an unknown name or
// an MLP preset.
std::optional<GptShape> find_preset(std::string_view name);

// A preset name, a .json file or inline JSON in src/model's schema
// (model::resolve_model_config), as a GPT shape. ConfigError naming the
// presets when nothing matches, or when the model is an MLP.
GptShape resolve_model(std::string_view spec);

}  // namespace zerodp::plan
