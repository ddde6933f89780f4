// SPDX-License-Identifier: Apache-2.0
// The starting weights of `zerodp train --init-from` for the Llama family: a
// Hugging Face checkpoint as SmolLM2, Qwen2.5 and Llama 3.2 ship it.
//   DIR/config.json                       LlamaForCausalLM or Qwen2ForCausalLM
//   DIR/model.safetensors                 one file, or
//   DIR/model.safetensors.index.json      {"weight_map": {tensor: file}} and
//   DIR/model-0000K-of-0000M.safetensors  the shards it names
// (or PATH.safetensors with config.json beside it). Tensors in F32, BF16 or
// F16, under Hugging Face's names, which are the model's own
// (model/llama.h: Llama::tensors()); a tied model's file may carry
// lm_head.weight too (it is not read).
// The constructor checks everything before a byte of data is read:
// config.json against the model the run trains (ConfigError naming each
// field that differs, and the --model that fits), every tensor present with
// its shape and a dtype it reads (InputFileError naming the file and the
// tensor). read() then serves any flat range in the model's order, so each
// rank reads only the parameters it holds, converting through one buffer of
// at most 256 Ki elements; no rank materialises the model.
// Thread-safety: one reader per thread (the buffer).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>

#include "model/llama_config.h"
#include "weights/init_weights.h"

namespace zerodp::weights {

// The config.json of a Hugging Face checkpoint directory or file at `path`
// when it parses and names a Llama-family architecture zerodp reads; nullopt
// otherwise (no config.json, not JSON, another architecture).
std::optional<nlohmann::json> llama_hf_config_json(const std::string& path);
inline bool is_llama_hf_checkpoint(const std::string& path) { return llama_hf_config_json(path).has_value(); }

// config.json's fields as a LlamaConfig (ConfigError naming the file and the
// field: an architecture zerodp lacks, an activation other than silu, MLP
// biases, a rope_scaling type other than llama3).
model::LlamaConfig llama_config_from_hf(const nlohmann::json& config, const std::string& path);

class LlamaHfReader final : public InitWeights {
 public:
  LlamaHfReader(const std::string& path, const model::LlamaConfig& expected);
  ~LlamaHfReader();
  LlamaHfReader(const LlamaHfReader&) = delete;
  LlamaHfReader& operator=(const LlamaHfReader&) = delete;

  // "Hugging Face LlamaForCausalLM, BF16, 2 safetensors files", for the log.
  std::string description() const override;
  // Fills `out` with flat parameters [first, first + out.size()).
  void read(size_t first, std::span<float> out) override;
  // One slice of kSliceElements in the widest non-F32 dtype; 0 when all is F32.
  uint64_t scratch_bytes() const override;

  static constexpr size_t kSliceElements = size_t{1} << 18;  // converted at a time (512 KiB of BF16)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zerodp::weights
