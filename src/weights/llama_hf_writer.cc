// SPDX-License-Identifier: Apache-2.0
#include "weights/llama_hf_writer.h"

#include <fmt/format.h>

namespace zerodp::weights {

nlohmann::ordered_json llama_config_to_hf(const model::LlamaConfig& c, Dtype dtype) {
  nlohmann::ordered_json j;
  j["architectures"] = {c.qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM"};
  j["model_type"] = c.qkv_bias ? "qwen2" : "llama";
  j["vocab_size"] = c.vocab;
  j["hidden_size"] = c.hidden;
  j["intermediate_size"] = c.intermediate;
  j["num_hidden_layers"] = c.layers;
  j["num_attention_heads"] = c.heads;
  j["num_key_value_heads"] = c.kv_heads;
  j["head_dim"] = c.head_dim;
  j["hidden_act"] = "silu";
  j["max_position_embeddings"] = c.max_seq_len;
  j["rms_norm_eps"] = c.norm_eps;
  j["rope_theta"] = c.rope_theta;
  if (c.rope_scaling.llama3) {
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", c.rope_scaling.factor},
                         {"low_freq_factor", c.rope_scaling.low_freq_factor},
                         {"high_freq_factor", c.rope_scaling.high_freq_factor},
                         {"original_max_position_embeddings", c.rope_scaling.original_max_position}};
  } else {
    j["rope_scaling"] = nullptr;
  }
  j["tie_word_embeddings"] = c.tied;
  if (!c.qkv_bias) j["attention_bias"] = false;
  j["mlp_bias"] = false;
  j["torch_dtype"] = hf_torch_dtype(dtype);
  return j;
}

uint64_t write_hf_llama(const std::string& dir, const model::LlamaConfig& config, std::span<const ExportTensor> tensors,
                        const PieceReader& read, const HfWriteOptions& options, std::vector<std::string>& written) {
  return write_hf_checkpoint(dir, llama_config_to_hf(config, options.dtype).dump(2) + "\n", tensors, read, options,
                             written);
}

}  // namespace zerodp::weights
