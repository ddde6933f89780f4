// SPDX-License-Identifier: Apache-2.0
#include "weights/llama_hf_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "ckpt/file_io.h"
#include "weights/hf_format.h"

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
  j["torch_dtype"] = dtype == Dtype::bf16() ? "bfloat16" : dtype == Dtype::fp16() ? "float16" : "float32";
  return j;
}

uint64_t write_hf_llama(const std::string& dir, const model::LlamaConfig& config, std::span<const ExportTensor> tensors,
                        const PieceReader& read, const HfWriteOptions& options, std::vector<std::string>& written) {
  // Consecutive tensors grouped into files of at most max_shard_bytes.
  std::vector<std::vector<ExportTensor>> shards(1);
  uint64_t in_shard = 0, total = 0;
  for (const ExportTensor& t : tensors) {
    const uint64_t bytes = options.dtype.size() * t.count();
    if (options.max_shard_bytes > 0 && !shards.back().empty() && in_shard + bytes > options.max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(t);
    in_shard += bytes;
    total += bytes;
  }
  uint64_t buffers = 0;
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    const std::string name = shards.size() == 1
                                 ? std::string(kHfWeightsName)
                                 : fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, shards.size());
    const std::string path = (std::filesystem::path(dir) / name).string();
    buffers = std::max(
        buffers, write_safetensors(path, shards[i], read, {{"format", "pt"}}, "", kExportSliceElements, options.dtype));
    for (const ExportTensor& t : shards[i]) weight_map[t.name] = name;
    written.push_back(name);
  }
  if (shards.size() > 1) {
    const nlohmann::ordered_json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    ckpt::write_file_atomically(dir + "/" + kHfIndexName, index.dump(2) + "\n");
    written.emplace_back(kHfIndexName);
  }
  ckpt::write_file_atomically(dir + "/" + kHfConfigName, llama_config_to_hf(config, options.dtype).dump(2) + "\n");
  written.emplace_back(kHfConfigName);
  return buffers;
}

}  // namespace zerodp::weights
