// SPDX-License-Identifier: Apache-2.0
// The starting weights of `zerodp train --init-from PATH`, for every family
// zerodp reads them for, each family's reader an InitWeights: GPT-2 (weights_reader.h: llm.c, zerodp or Hugging
// Face GPT-2 files) and the Llama family (llama_hf_reader.h: Hugging Face
// checkpoints in F32, BF16 or F16, one file or sharded). The run opens one
// per process to check the file before any rank allocates, then one per
// rank, which reads only the flat range it holds.
// Thread-safety: one reader per thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "model/presets.h"

namespace zerodp::weights {

class InitWeights {
 public:
  virtual ~InitWeights() = default;
  // What was read, for the run's log: "Hugging Face LlamaForCausalLM, BF16, ...".
  virtual std::string description() const = 0;
  // Fills `out` with flat parameters [first, first + out.size()).
  virtual void read(size_t first, std::span<float> out) = 0;
  // The most bytes read() holds besides `out` (its conversion or transpose
  // buffer): what --init-from adds to a rank's memory plan
  // (plan::EngineRun::load_scratch).
  virtual uint64_t scratch_bytes() const = 0;
};

// Opens and checks PATH against the run's model (InputFileError for the
// file, ConfigError when it holds another model or the family has no
// reader).
std::unique_ptr<InitWeights> open_init_weights(const std::string& path, const model::ModelConfig& config);

// The model a Hugging Face Llama-family checkpoint at PATH holds, from its
// config.json, as the model JSON `--model` takes; "" when PATH is not one.
// `zerodp train --init-from DIR` without --model trains this shape.
std::string model_json_of_checkpoint(const std::string& path);

}  // namespace zerodp::weights
