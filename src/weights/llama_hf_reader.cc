// SPDX-License-Identifier: Apache-2.0
#include "weights/llama_hf_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "ckpt/file_io.h"
#include "core/convert.h"
#include "core/error.h"
#include "model/llama.h"
#include "weights/hf_format.h"
#include "weights/safetensors_reader.h"

namespace zerodp::weights {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The architectures whose tensors and conventions are the Llama family's.
bool is_llama_architecture(const std::string& name) { return name == "LlamaForCausalLM" || name == "Qwen2ForCausalLM"; }

std::string architecture_of(const json& config) {
  if (config.contains("architectures") && config["architectures"].is_array() && !config["architectures"].empty() &&
      config["architectures"][0].is_string()) {
    return config["architectures"][0].get<std::string>();
  }
  return "";
}

int int_field(const json& j, const char* key, const std::string& path) {
  ZDP_CHECK(j.contains(key) && j[key].is_number_integer(), ConfigError,
            "[init-from] {} has no integer \"{}\": it is not a complete Hugging Face config", path, key);
  return j[key].get<int>();
}

}  // namespace

std::optional<json> llama_hf_config_json(const std::string& path) {
  std::error_code ec;
  const std::string config = hf_config_path(path);
  if (!fs::is_regular_file(config, ec)) return std::nullopt;
  try {
    std::ifstream in(config);
    json j = json::parse(in);
    if (is_llama_architecture(architecture_of(j))) return j;
  } catch (const json::exception&) {
    // not one: the GPT-2 readers say what is wrong with it
  }
  return std::nullopt;
}

model::LlamaConfig llama_config_from_hf(const json& j, const std::string& path) {
  const std::string arch = architecture_of(j);
  ZDP_CHECK(is_llama_architecture(arch), ConfigError,
            "[init-from] {} describes a \"{}\" model; zerodp reads LlamaForCausalLM and Qwen2ForCausalLM "
            "checkpoints (SmolLM2, Llama 3.2, Qwen2.5)",
            path, arch.empty() ? std::string("(no architectures)") : arch);
  const bool qwen2 = arch == "Qwen2ForCausalLM";
  const std::string act = j.value("hidden_act", std::string("silu"));
  ZDP_CHECK(act == "silu", ConfigError,
            "[init-from] {} has hidden_act \"{}\"; the Llama family in zerodp is SwiGLU (silu)", path, act);
  ZDP_CHECK(!j.value("mlp_bias", false), ConfigError,
            "[init-from] {} has mlp_bias true; zerodp's Llama MLP has no biases", path);
  model::LlamaConfig c;
  c.vocab = int_field(j, "vocab_size", path);
  c.hidden = int_field(j, "hidden_size", path);
  c.layers = int_field(j, "num_hidden_layers", path);
  c.heads = int_field(j, "num_attention_heads", path);
  c.kv_heads = j.contains("num_key_value_heads") ? int_field(j, "num_key_value_heads", path) : c.heads;
  c.head_dim = j.contains("head_dim") && !j["head_dim"].is_null() ? int_field(j, "head_dim", path)
                                                                  : (c.heads > 0 ? c.hidden / c.heads : 0);
  c.intermediate = int_field(j, "intermediate_size", path);
  c.max_seq_len = int_field(j, "max_position_embeddings", path);
  c.tied = j.value("tie_word_embeddings", false);  // both configs' default
  // Qwen2 always has q/k/v biases; Llama has them with attention_bias (and
  // then an o_proj bias too, which zerodp lacks).
  ZDP_CHECK(qwen2 || !j.value("attention_bias", false), ConfigError,
            "[init-from] {} has attention_bias true; zerodp's Llama attention has no biases (Qwen2's q/k/v "
            "biases are read from Qwen2ForCausalLM checkpoints)",
            path);
  c.qkv_bias = qwen2;
  c.rope_theta = j.value("rope_theta", 10000.0);
  c.norm_eps = j.value("rms_norm_eps", 1e-6);
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null()) {
    const json& r = j["rope_scaling"];
    const std::string type = r.value("rope_type", r.value("type", std::string("")));
    ZDP_CHECK(type == "llama3", ConfigError,
              "[init-from] {} has rope_scaling of type \"{}\"; zerodp applies Llama 3's (\"llama3\") or none", path,
              type);
    c.rope_scaling = {true, r.value("factor", 8.0), r.value("low_freq_factor", 1.0), r.value("high_freq_factor", 4.0),
                      r.value("original_max_position_embeddings", 8192)};
  }
  c.validate();
  return c;
}

struct LlamaHfReader::Impl {
  struct Source {
    size_t file = 0;
    uint64_t begin = 0;  // the tensor's first byte in that file
    Dtype dtype;
  };
  std::vector<ckpt::File> files;
  std::vector<model::TensorInfo> tensors;  // flat order
  std::vector<Source> sources;             // one per tensor
  std::vector<std::byte> buffer;
  std::string description;
};

namespace {

// What differs between the checkpoint's config and the run's model, as
// "hidden_size 576 (--model: 128), ...". The context (max_seq_len) may
// differ: it is how far zerodp trains, and no tensor depends on it.
std::string config_differences(const model::LlamaConfig& file, const model::LlamaConfig& run) {
  std::vector<std::string> d;
  auto cmp = [&d](const char* name, const auto& a, const auto& b) {
    if (a != b) d.push_back(fmt::format("{} {} (--model: {})", name, a, b));
  };
  cmp("vocab_size", file.vocab, run.vocab);
  cmp("hidden_size", file.hidden, run.hidden);
  cmp("num_hidden_layers", file.layers, run.layers);
  cmp("num_attention_heads", file.heads, run.heads);
  cmp("num_key_value_heads", file.kv_heads, run.kv_heads);
  cmp("head_dim", file.head_dim, run.head_dim);
  cmp("intermediate_size", file.intermediate, run.intermediate);
  cmp("tie_word_embeddings", file.tied, run.tied);
  cmp("q/k/v biases", file.qkv_bias, run.qkv_bias);
  cmp("rope_theta", file.rope_theta, run.rope_theta);
  cmp("rms_norm_eps", file.norm_eps, run.norm_eps);
  cmp("rope_scaling", file.rope_scaling.llama3, run.rope_scaling.llama3);
  if (file.rope_scaling.llama3 && run.rope_scaling.llama3 && !(file.rope_scaling == run.rope_scaling)) {
    d.emplace_back("rope_scaling's factors");
  }
  std::string out;
  for (const std::string& s : d) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

LlamaHfReader::LlamaHfReader(const std::string& path, const model::LlamaConfig& expected)
    : impl_(std::make_unique<Impl>()) {
  const std::string config_path = hf_config_path(path);
  ZDP_CHECK(fs::is_regular_file(config_path), InputFileError,
            "[init-from] {} has no config.json beside its weights: copy the checkpoint's config.json there", path);
  const model::LlamaConfig file_config = llama_config_from_hf(read_hf_json(config_path), config_path);
  const std::string differences = config_differences(file_config, expected);
  ZDP_CHECK(differences.empty(), ConfigError,
            "[init-from] {} holds another model than --model: {}; leave --model out to train the checkpoint's own "
            "shape",
            config_path, differences);

  const HfFiles files = open_hf_files(path);
  const model::Llama model(expected);
  impl_->tensors = model.tensors();
  std::set<std::string> dtypes;
  for (const model::TensorInfo& t : impl_->tensors) {
    const SafetensorsEntry& entry = files.entry(t.name);
    const size_t file = files.file_of.at(t.name);
    const std::string& file_path = files.headers[file].path;
    const std::vector<int64_t> want(t.shape.begin(), t.shape.end());
    ZDP_CHECK(entry.shape == want, InputFileError,
              "[init-from] {}: tensor {} has shape {}, config.json's shape needs {}", file_path, t.name,
              shape_text(entry.shape), shape_text(want));
    const Dtype dtype = hf_tensor_dtype(entry, t.name, file_path);
    dtypes.insert(entry.dtype);
    impl_->sources.push_back({file, entry.begin, dtype});
  }
  for (const SafetensorsHeader& h : files.headers) impl_->files.emplace_back(h.path, ckpt::File::Mode::kRead);
  std::string dtype_list;
  for (const std::string& d : dtypes) dtype_list += (dtype_list.empty() ? "" : "+") + d;
  impl_->description = fmt::format("Hugging Face {}, {}, {} safetensors file{}",
                                   file_config.qkv_bias ? "Qwen2ForCausalLM" : "LlamaForCausalLM", dtype_list,
                                   files.headers.size(), files.headers.size() == 1 ? "" : "s");
}

LlamaHfReader::~LlamaHfReader() = default;

std::string LlamaHfReader::description() const { return impl_->description; }

uint64_t LlamaHfReader::scratch_bytes() const {
  size_t widest = 0;
  for (const Impl::Source& s : impl_->sources) {
    if (s.dtype != Dtype::fp32()) widest = std::max(widest, s.dtype.size());
  }
  return uint64_t{kSliceElements} * widest;
}

void LlamaHfReader::read(size_t first, std::span<float> out) {
  constexpr size_t kSlice = kSliceElements;
  impl_->buffer.reserve(scratch_bytes());  // once, exactly: the plan's load_scratch
  const size_t last = first + out.size();
  for (size_t i = 0; i < impl_->tensors.size(); ++i) {
    const model::TensorInfo& t = impl_->tensors[i];
    const size_t lo = std::max(first, t.offset), hi = std::min(last, t.offset + t.count);
    if (lo >= hi) continue;
    const Impl::Source& s = impl_->sources[i];
    const size_t elem = s.dtype.size();
    for (size_t at = lo; at < hi; at += kSlice) {
      const size_t n = std::min(kSlice, hi - at);
      const std::span<float> dst = out.subspan(at - first, n);
      const uint64_t offset = s.begin + uint64_t(at - t.offset) * elem;
      if (s.dtype == Dtype::fp32()) {
        impl_->files[s.file].read_at(offset, std::as_writable_bytes(dst));
        continue;
      }
      impl_->buffer.resize(n * elem);
      impl_->files[s.file].read_at(offset, impl_->buffer);
      convert(impl_->buffer.data(), s.dtype, dst.data(), Dtype::fp32(), n);
    }
  }
}

}  // namespace zerodp::weights
