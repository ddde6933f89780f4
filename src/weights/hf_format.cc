// SPDX-License-Identifier: Apache-2.0
#include "weights/hf_format.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "ckpt/file_io.h"
#include "core/error.h"

namespace zerodp::weights {

using ckpt::File;
using ckpt::join_path;
using ckpt::read_small_file;
namespace {

constexpr int kGpt2Vocab = 50257;  // GPT-2's tokenizer; its last id is <|endoftext|>

int config_int(const nlohmann::json& j, const char* key, const std::string& path) {
  ZDP_CHECK(j.contains(key), InputFileError, "[load] {}: has no \"{}\" (a GPT2Config has it)", path, key);
  const auto& v = j.at(key);
  ZDP_CHECK(v.is_number_integer() && v.get<int64_t>() >= 1 && v.get<int64_t>() <= (int64_t{1} << 30), InputFileError,
            "[load] {}: \"{}\" is {}, not a positive integer", path, key, v.dump());
  return v.get<int>();
}

// `key` is absent (transformers' default applies), null when `null_ok`, or
// one of `accepted`; otherwise the model computes something zerodp does not.
void expect_value(const nlohmann::json& j, const char* key, std::initializer_list<nlohmann::json> accepted,
                  const std::string& path, const char* zerodp_has) {
  if (!j.contains(key)) return;
  const auto& v = j.at(key);
  for (const auto& a : accepted) {
    if (v == a) return;
  }
  ZDP_THROW(InputFileError, "[load] {}: \"{}\" is {}; zerodp's GPT has {}", path, key, v.dump(), zerodp_has);
}

}  // namespace

std::vector<ExportTensor> hf_gpt2_tensors(const model::GptConfig& g, const std::string& prefix) {
  const size_t C = static_cast<size_t>(g.channels);
  const size_t V = static_cast<size_t>(g.vocab);
  const size_t Vp = static_cast<size_t>(g.padded_vocab);
  const size_t T = static_cast<size_t>(g.max_seq_len);
  const int64_t Ci = g.channels;
  const model::BlockLayout b = model::block_layout(g.channels);
  const size_t embedding = model::embedding_unit_params(g);
  std::vector<ExportTensor> out;
  out.push_back({prefix + "wte.weight", {g.vocab, Ci}, {{0, V * C}}});
  out.push_back({prefix + "wpe.weight", {g.max_seq_len, Ci}, {{Vp * C, T * C}}});
  for (size_t l = 0; l < static_cast<size_t>(g.layers); ++l) {
    const size_t u = embedding + l * b.count;
    const std::string h = fmt::format("{}h.{}.", prefix, l);
    auto add = [&](const char* name, std::vector<int64_t> shape, size_t offset, size_t count, size_t rows = 0) {
      out.push_back({h + name, std::move(shape), {{u + offset, count, rows}}});
    };
    add("ln_1.weight", {Ci}, b.ln1w, C);
    add("ln_1.bias", {Ci}, b.ln1b, C);
    add("attn.c_attn.weight", {Ci, 3 * Ci}, b.qkvw, 3 * C * C, 3 * C);
    add("attn.c_attn.bias", {3 * Ci}, b.qkvb, 3 * C);
    add("attn.c_proj.weight", {Ci, Ci}, b.attprojw, C * C, C);
    add("attn.c_proj.bias", {Ci}, b.attprojb, C);
    add("ln_2.weight", {Ci}, b.ln2w, C);
    add("ln_2.bias", {Ci}, b.ln2b, C);
    add("mlp.c_fc.weight", {Ci, 4 * Ci}, b.fcw, 4 * C * C, 4 * C);
    add("mlp.c_fc.bias", {4 * Ci}, b.fcb, 4 * C);
    add("mlp.c_proj.weight", {4 * Ci, Ci}, b.fcprojw, 4 * C * C, C);
    add("mlp.c_proj.bias", {Ci}, b.fcprojb, C);
  }
  const size_t lnf = embedding + static_cast<size_t>(g.layers) * b.count;
  out.push_back({prefix + "ln_f.weight", {Ci}, {{lnf, C}}});
  out.push_back({prefix + "ln_f.bias", {Ci}, {{lnf + C, C}}});
  return out;
}

std::string hf_gpt2_config_json(const model::GptConfig& g, Dtype dtype) {
  const nlohmann::ordered_json token = g.vocab == kGpt2Vocab ? nlohmann::ordered_json(kGpt2Vocab - 1) : nullptr;
  nlohmann::ordered_json j;
  j["activation_function"] = "gelu_new";
  j["architectures"] = {"GPT2LMHeadModel"};
  j["attn_pdrop"] = 0.0;
  j["bos_token_id"] = token;
  j["embd_pdrop"] = 0.0;
  j["eos_token_id"] = token;
  j["initializer_range"] = 0.02;
  j["layer_norm_epsilon"] = 1e-5;
  j["model_type"] = "gpt2";
  j["n_ctx"] = g.max_seq_len;
  j["n_embd"] = g.channels;
  j["n_head"] = g.heads;
  j["n_inner"] = nullptr;
  j["n_layer"] = g.layers;
  j["n_positions"] = g.max_seq_len;
  j["reorder_and_upcast_attn"] = false;
  j["resid_pdrop"] = 0.0;
  j["scale_attn_by_inverse_layer_idx"] = false;
  j["scale_attn_weights"] = true;
  j["tie_word_embeddings"] = true;
  j["torch_dtype"] = hf_torch_dtype(dtype);
  j["use_cache"] = true;
  j["vocab_size"] = g.vocab;
  return j.dump(2) + "\n";
}

uint64_t write_hf_gpt2(const std::string& dir, const model::GptConfig& config, const PieceReader& read,
                       const HfWriteOptions& options, std::vector<std::string>& written, size_t slice_elements) {
  return write_hf_checkpoint(dir, hf_gpt2_config_json(config, options.dtype), hf_gpt2_tensors(config), read, options,
                             written, slice_elements);
}

HfGpt2Config read_hf_gpt2_config(const std::string& path) {
  const std::string text = read_small_file(path, size_t{1} << 20);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    ZDP_THROW(InputFileError, "[load] {}: not valid JSON ({})", path, e.what());
  }
  ZDP_CHECK(j.is_object(), InputFileError, "[load] {}: not a JSON object", path);
  expect_value(j, "model_type", {"gpt2"}, path, "model_type gpt2");
  expect_value(j, "activation_function", {"gelu_new", "gelu_pytorch_tanh"}, path,
               "GELU's tanh form (gelu_new / gelu_pytorch_tanh)");
  expect_value(j, "tie_word_embeddings", {true}, path, "an LM head tied to wte");
  expect_value(j, "scale_attn_weights", {true}, path, "attention scaled by 1/sqrt(head size)");
  expect_value(j, "scale_attn_by_inverse_layer_idx", {false}, path, "no per-layer attention scaling");
  HfGpt2Config c;
  c.layers = config_int(j, "n_layer", path);
  c.heads = config_int(j, "n_head", path);
  c.channels = config_int(j, "n_embd", path);
  c.vocab = config_int(j, "vocab_size", path);
  c.positions = config_int(j, "n_positions", path);
  expect_value(j, "n_inner", {nullptr, 4 * c.channels}, path, "an MLP of 4 x n_embd");
  if (j.contains("layer_norm_epsilon")) {
    const auto& e = j.at("layer_norm_epsilon");
    ZDP_CHECK(e.is_number() && std::abs(e.get<double>() - 1e-5) <= 1e-12, InputFileError,
              "[load] {}: \"layer_norm_epsilon\" is {}; zerodp's layernorm uses 1e-05", path, e.dump());
  }
  return c;
}

}  // namespace zerodp::weights
