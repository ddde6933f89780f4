// SPDX-License-Identifier: Apache-2.0
// --init-from for the Llama family: Hugging Face checkpoints (config.json
// and safetensors, one file or shards with an index) in F32, BF16 and F16
// give exactly the file's values at every flat range; config.json is read
// into the model's shape; a checkpoint of another shape, a missing tensor,
// a wrong shape, an unread dtype or architecture are refused naming them.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../kernels/safetensors_fixture.h"
#include "ckpt/ckpt_test_util.h"
#include "core/dtype.h"
#include "core/error.h"
#include "model/llama.h"
#include "model/presets.h"
#include "weights/init_weights.h"
#include "weights/llama_hf_reader.h"
#include "weights/llama_hf_writer.h"

namespace zerodp::weights::testing {
namespace {

namespace fs = std::filesystem;
using ckpt::testing::TempDir;
using nlohmann::json;

const std::string kQwen2 = std::string(ZERODP_LLAMA_FIXTURE_DIR) + "/llama_tiny_qwen2";
const std::string kLlama = std::string(ZERODP_LLAMA_FIXTURE_DIR) + "/llama_tiny_llama";

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

model::LlamaConfig config_of(const std::string& dir) {
  return llama_config_from_hf(read_json(dir + "/config.json"), dir + "/config.json");
}

// The fixture's tensors, flat in the model's order.
std::vector<float> fixture_params(const std::string& dir) {
  const model::Llama m(config_of(dir));
  const kernels::testing::SafetensorsFixture w(dir + "/model.safetensors");
  std::vector<float> flat(m.num_params());
  for (const model::TensorInfo& t : m.tensors())
    std::copy(w.f32(t.name).begin(), w.f32(t.name).end(), flat.begin() + long(t.offset));
  return flat;
}

// One safetensors file of `names` (taken from `dir`'s fixture) in `dtype`
// ("F32", "BF16" or "F16"); returns the values as the file holds them.
void write_file(const std::string& path, const std::string& dir, const std::vector<std::string>& names,
                const std::string& dtype) {
  const kernels::testing::SafetensorsFixture w(dir + "/model.safetensors");
  json header = json::object();
  std::string data;
  for (const std::string& name : names) {
    const auto& v = w.f32(name);
    std::string bytes;
    for (float f : v) {
      if (dtype == "F32") {
        bytes.append(reinterpret_cast<const char*>(&f), 4);
      } else if (dtype == "BF16") {
        const BFloat16 b = float_to_bfloat16(f);
        bytes.append(reinterpret_cast<const char*>(&b), 2);
      } else {
        const Half h = float_to_half(f);
        bytes.append(reinterpret_cast<const char*>(&h), 2);
      }
    }
    std::vector<int64_t> shape(w.shape(name).begin(), w.shape(name).end());
    header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data += bytes;
  }
  std::string h = header.dump();
  while (h.size() % 8 != 0) h += ' ';
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = h.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << h << data;
}

// A copy of the fixture at `dir` in `dtype`, as `shards` files with an
// index (1: model.safetensors alone).
void write_checkpoint(const std::string& to, const std::string& dir, const std::string& dtype, int shards) {
  fs::copy_file(dir + "/config.json", to + "/config.json");
  const model::Llama m(config_of(dir));
  std::vector<std::vector<std::string>> names(shards);
  const std::vector<model::TensorInfo> tensors = m.tensors();
  for (size_t i = 0; i < tensors.size(); ++i) names[i * shards / tensors.size()].push_back(tensors[i].name);
  if (shards == 1) {
    write_file(to + "/model.safetensors", dir, names[0], dtype);
    return;
  }
  json map = json::object();
  for (int s = 0; s < shards; ++s) {
    const std::string file =
        "model-0000" + std::to_string(s + 1) + "-of-0000" + std::to_string(shards) + ".safetensors";
    write_file(to + "/" + file, dir, names[s], dtype);
    for (const std::string& n : names[s]) map[n] = file;
  }
  std::ofstream(to + "/model.safetensors.index.json") << json{{"metadata", json::object()}, {"weight_map", map}}.dump();
}

// Every element through reads of `step` elements at a time.
std::vector<float> read_all(LlamaHfReader& r, size_t count, size_t step) {
  std::vector<float> out(count);
  for (size_t at = 0; at < count; at += step) r.read(at, std::span<float>(out).subspan(at, std::min(step, count - at)));
  return out;
}

TEST(LlamaHf, ConfigJsonIsTheFixturesShape) {
  const model::LlamaConfig q = config_of(kQwen2);
  EXPECT_EQ(q.vocab, 64);
  EXPECT_EQ(q.kv_heads, 1);
  EXPECT_TRUE(q.qkv_bias);
  EXPECT_FALSE(q.tied);
  EXPECT_TRUE(q.rope_scaling.llama3);
  EXPECT_EQ(q.rope_scaling.original_max_position, 64);
  EXPECT_FALSE(config_of(kLlama).qkv_bias);
  EXPECT_TRUE(is_llama_hf_checkpoint(kQwen2));
  EXPECT_TRUE(is_llama_hf_checkpoint(kQwen2 + "/model.safetensors"));
  EXPECT_FALSE(is_llama_hf_checkpoint(std::string(ZERODP_HF_FIXTURE_DIR)));  // GPT-2's
  // --init-from DIR without --model trains this shape.
  const model::ModelConfig mc = model::resolve_model_config(model_json_of_checkpoint(kQwen2));
  EXPECT_EQ(mc.kind(), "llama");
  EXPECT_EQ(mc.spec->num_params(), model::Llama(q).num_params());
}

TEST(LlamaHf, F32FileReadsExactlyAtEveryRange) {
  for (const std::string& dir : {kQwen2, kLlama}) {
    const std::vector<float> want = fixture_params(dir);
    LlamaHfReader r(dir, config_of(dir));
    for (size_t step : {size_t{1} << 20, size_t{37}, size_t{1000}}) {
      const std::vector<float> got = read_all(r, want.size(), step);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0) << dir << " step " << step;
    }
    EXPECT_NE(r.description().find("F32, 1 safetensors file"), std::string::npos) << r.description();
    EXPECT_EQ(r.scratch_bytes(), 0u);  // F32 reads in place
  }
}

TEST(LlamaHf, Bf16AndF16ShardsReadAsTheirValues) {
  for (const std::string dtype : {"BF16", "F16"}) {
    for (int shards : {1, 3}) {
      TempDir tmp;
      write_checkpoint(tmp.path(), kQwen2, dtype, shards);
      std::vector<float> want = fixture_params(kQwen2);
      for (float& f : want)
        f = dtype == "BF16" ? bfloat16_to_float(float_to_bfloat16(f)) : half_to_float(float_to_half(f));
      LlamaHfReader r(tmp.path(), config_of(kQwen2));
      const std::vector<float> got = read_all(r, want.size(), 101);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * 4), 0) << dtype << " in " << shards;
      EXPECT_EQ(r.scratch_bytes(), LlamaHfReader::kSliceElements * 2);  // one slice of 2-byte values
      EXPECT_NE(r.description().find(dtype + ", " + std::to_string(shards) + " safetensors file"), std::string::npos)
          << r.description();
    }
  }
}

// What `ckpt consolidate` writes for the family reads back to the same bits
// and the same shape (untied with biases and Llama 3 scaling; tied).
TEST(LlamaHf, WrittenCheckpointReadsBackExactly) {
  for (const std::string& dir : {kQwen2, kLlama}) {
    const model::LlamaConfig c = config_of(dir);
    const std::vector<float> flat = fixture_params(dir);
    const model::ModelConfig mc = model::resolve_model_config(model_json_of_checkpoint(dir));
    const PieceReader read = [&flat](size_t first, std::span<float> out) {
      std::copy_n(flat.begin() + long(first), out.size(), out.begin());
    };
    TempDir tmp;
    std::vector<std::string> written;
    write_hf_llama(tmp.path(), c, export_tensors(mc), read, {}, written);
    EXPECT_EQ(written, (std::vector<std::string>{"model.safetensors", "config.json"}));
    EXPECT_EQ(config_of(tmp.path()), c) << dir;
    LlamaHfReader r(tmp.path(), c);
    const std::vector<float> got = read_all(r, flat.size(), 1 << 20);
    EXPECT_EQ(std::memcmp(got.data(), flat.data(), flat.size() * 4), 0) << dir;

    // BF16 in shards of at most 8 KB: the values rounded once, every tensor
    // in the index, torch_dtype bfloat16.
    TempDir sharded;
    written.clear();
    write_hf_llama(sharded.path(), c, export_tensors(mc), read, {.dtype = Dtype::bf16(), .max_shard_bytes = 8000},
                   written);
    ASSERT_GT(written.size(), 3u) << "expected several shards";
    EXPECT_EQ(written.back(), "config.json");
    EXPECT_EQ(written[written.size() - 2], "model.safetensors.index.json");
    const size_t shards = written.size() - 2;
    EXPECT_EQ(written[0], "model-00001-of-0000" + std::to_string(shards) + ".safetensors");
    EXPECT_EQ(read_json(sharded / "config.json").at("torch_dtype"), "bfloat16");
    for (size_t i = 0; i < shards; ++i) {
      const uint64_t bytes = fs::file_size(sharded / written[i]);
      EXPECT_LT(bytes, 8000u + 4096u) << written[i];  // the tensors' bytes within the limit, plus the header
    }
    LlamaHfReader rb(sharded.path(), c);
    std::vector<float> want = flat;
    for (float& f : want) f = bfloat16_to_float(float_to_bfloat16(f));
    const std::vector<float> got16 = read_all(rb, flat.size(), 333);
    EXPECT_EQ(std::memcmp(got16.data(), want.data(), want.size() * 4), 0) << dir;
  }
}

template <class E>
std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LlamaHf, RefusesWhatDoesNotFitNamingIt) {
  // Another shape than --model: each differing field named.
  model::LlamaConfig other = config_of(kQwen2);
  other.hidden = 48;
  other.kv_heads = 2;
  std::string m = message_of<ConfigError>([&] { LlamaHfReader(kQwen2, other); });
  EXPECT_NE(m.find("hidden_size 32 (--model: 48)"), std::string::npos) << m;
  EXPECT_NE(m.find("num_key_value_heads 1 (--model: 2)"), std::string::npos) << m;
  EXPECT_NE(m.find("leave --model out"), std::string::npos) << m;
  // The context may differ: no tensor depends on it.
  other = config_of(kQwen2);
  other.max_seq_len = 32;
  EXPECT_NO_THROW(LlamaHfReader(kQwen2, other));

  // A shard the index names is missing; a tensor the index lacks.
  {
    TempDir tmp;
    write_checkpoint(tmp.path(), kQwen2, "BF16", 3);
    fs::remove(tmp / "model-00002-of-00003.safetensors");
    m = message_of<InputFileError>([&] { LlamaHfReader(tmp.path(), config_of(kQwen2)); });
    EXPECT_NE(m.find("model-00002-of-00003.safetensors is missing"), std::string::npos) << m;
  }
  {
    TempDir tmp;
    write_checkpoint(tmp.path(), kQwen2, "BF16", 3);
    json index = read_json(tmp / "model.safetensors.index.json");
    index["weight_map"].erase("model.norm.weight");
    std::ofstream(tmp / "model.safetensors.index.json") << index.dump();
    m = message_of<InputFileError>([&] { LlamaHfReader(tmp.path(), config_of(kQwen2)); });
    EXPECT_NE(m.find("lacks tensor model.norm.weight"), std::string::npos) << m;
  }
  // A config.json whose shape disagrees with the file's tensors.
  {
    TempDir tmp;
    write_checkpoint(tmp.path(), kQwen2, "F32", 1);
    json c = read_json(tmp / "config.json");
    c["intermediate_size"] = 40;
    std::ofstream(tmp / "config.json") << c.dump();
    model::LlamaConfig want = config_of(kQwen2);
    want.intermediate = 40;
    m = message_of<InputFileError>([&] { LlamaHfReader(tmp.path(), want); });
    EXPECT_NE(m.find("has shape [48, 32]"), std::string::npos) << m;
    EXPECT_NE(m.find("needs [40, 32]"), std::string::npos) << m;
  }
  // An architecture zerodp lacks; GELU; Llama's attention_bias.
  json c = read_json(kLlama + "/config.json");
  c["architectures"] = {"MistralForCausalLM"};
  m = message_of<ConfigError>([&] { llama_config_from_hf(c, "config.json"); });
  EXPECT_NE(m.find("\"MistralForCausalLM\""), std::string::npos) << m;
  c = read_json(kLlama + "/config.json");
  c["hidden_act"] = "gelu";
  EXPECT_THROW(llama_config_from_hf(c, "config.json"), ConfigError);
  c = read_json(kLlama + "/config.json");
  c["attention_bias"] = true;
  EXPECT_THROW(llama_config_from_hf(c, "config.json"), ConfigError);
  // No config.json beside the weights.
  {
    TempDir tmp;
    fs::copy_file(kQwen2 + "/model.safetensors", tmp / "model.safetensors");
    m = message_of<InputFileError>([&] { LlamaHfReader(tmp / "model.safetensors", config_of(kQwen2)); });
    EXPECT_NE(m.find("no config.json"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace zerodp::weights::testing
