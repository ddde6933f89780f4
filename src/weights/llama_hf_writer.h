// SPDX-License-Identifier: Apache-2.0
// Writing a Llama-family model as a Hugging Face checkpoint: config.json
// (LlamaForCausalLM, or Qwen2ForCausalLM for a model with q/k/v biases) and
// model.safetensors (or shards with an index) in F32, BF16 or F16 under the model's own tensor names, which are
// Hugging Face's (model/llama.h). `ckpt consolidate` writes it to OUT/hf/;
// `train --init-from OUT/hf` reads it back to the same bits
// (llama_hf_reader.h).
// Thread-safety: pure functions and file writes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "model/llama_config.h"
#include "weights/hf_checkpoint.h"

namespace zerodp::weights {

// config.json for `config` (llama_config_from_hf reads it back equal).
nlohmann::ordered_json llama_config_to_hf(const model::LlamaConfig& config, Dtype dtype = Dtype::fp32());

// Writes dir/config.json and dir/model.safetensors, or the shards and their
// index (dir exists); appends the files' names to `written`. Returns the
// bytes of the buffers the tensors streamed through.
uint64_t write_hf_llama(const std::string& dir, const model::LlamaConfig& config, std::span<const ExportTensor> tensors,
                        const PieceReader& read, const HfWriteOptions& options, std::vector<std::string>& written);

}  // namespace zerodp::weights
