// SPDX-License-Identifier: Apache-2.0
// consolidate: safetensors and llm.c files written from a sharded checkpoint
// hold exactly the master weights, under the documented names and shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ckpt/checkpoint.h"
#include "ckpt/checkpoint_dir.h"
#include "ckpt/ckpt_test_util.h"
#include "ckpt/manifest.h"
#include "ckpt/offline.h"
#include "model/gpt.h"
#include "model/gpt_family.h"
#include "model/llmc_io.h"
#include "optim/quant8.h"
#include "weights/consolidate.h"
#include "weights/export_format.h"

namespace zerodp::weights::testing {
namespace {

// The checkpoints these tests export come from ckpt and its test helpers.
using namespace zerodp::ckpt;           // NOLINT(google-build-using-namespace)
using namespace zerodp::ckpt::testing;  // NOLINT(google-build-using-namespace)

model::ModelConfig gpt_model(const model::GptConfig& g) { return model::gpt_model_config("custom", g); }

TEST(Consolidate, GptSafetensorsAndLlmcMatchTheMasterWeights) {
  TempDir dir;
  const model::GptConfig g{.max_seq_len = 8, .vocab = 50, .padded_vocab = 64, .layers = 2, .heads = 2, .channels = 8};
  const model::Gpt gpt(g);
  const std::vector<float> master = save_trained_gpt(g, 3, 3, Dtype::bf16(), dir / "ckpt");
  const ConsolidateResult r = consolidate(dir / "ckpt", dir / "out", {.optimizer_states = true});
  EXPECT_EQ(r.stream_buffer_bytes, 4 * largest_piece(export_tensors(gpt_model(g))));
  EXPECT_LT(r.stream_buffer_bytes, 4 * gpt.num_params());
  // model.safetensors, model.bin, hf/model.safetensors, hf/config.json, exp_avg, exp_avg_sq
  EXPECT_EQ(r.files.size(), 6u);

  // llm.c: byte-identical to the model layer's own writer.
  model::save_llmc_model(dir / "reference.bin", g, master);
  EXPECT_EQ(read_bytes(dir / "out/model.bin"), read_bytes(dir / "reference.bin"));
  const model::LlmcModel back = model::load_llmc_model(dir / "out/model.bin");
  EXPECT_TRUE(bitwise_equal(back.params, master));

  // safetensors: its data section is the llm.c payload, tensor by tensor.
  const Safetensors s = parse_safetensors(dir / "out/model.safetensors");
  const auto ref = read_bytes(dir / "reference.bin");
  ASSERT_EQ(s.data.size() + 1024, ref.size());
  EXPECT_EQ(0, std::memcmp(s.data.data(), ref.data() + 1024, s.data.size()));
  EXPECT_EQ(s.header.at("qkvw").at("shape"), nlohmann::json({2, 24, 8}));
  EXPECT_EQ(s.header.at("wte").at("shape"), nlohmann::json({64, 8}));
  const auto wte = tensor(s, "wte");
  EXPECT_EQ(0, std::memcmp(wte.data(), master.data(), wte.size() * 4));
  EXPECT_EQ(s.header.at("__metadata__").at("format"), "pt");
  EXPECT_EQ(s.header.size(), 17u);  // 16 tensors + metadata
  EXPECT_TRUE(fs::exists(dir / "out/exp_avg_sq.safetensors"));
}

TEST(Consolidate, MlpTensorsByLayer) {
  TempDir dir;
  const model::Mlp mlp(small_mlp());
  std::vector<float> master;
  zerodp::testing::run_on_ranks(2, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, test_config(2), kSeed, kMicro, 1);
    std::vector<double> losses;
    train_steps(engine, kMicro, 2, losses);
    auto m = engine.gather_master_params();
    if (comm.rank() == 0) master = m;
    save(engine, dir / "ckpt");
  });
  const ConsolidateResult r = consolidate(dir / "ckpt", dir / "out");
  EXPECT_EQ(r.files.size(), 1u);
  const Safetensors s = parse_safetensors(dir / "out/model.safetensors");
  EXPECT_EQ(s.header.at("fc1.weight").at("shape"), nlohmann::json({9, 17}));
  std::vector<float> all;
  for (const char* n : {"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) {
    const auto t = tensor(s, n);
    all.insert(all.end(), t.begin(), t.end());
  }
  EXPECT_TRUE(bitwise_equal(all, master));
}

// Two steps of the small MLP on 3 ranks with `config`, saved to `path`: the
// state as saved.
FullState save_trained_mlp(const zero::EngineConfig& config, const std::string& path) {
  const model::Mlp mlp(small_mlp());
  FullState state;
  std::mutex mu;
  zerodp::testing::run_on_ranks(3, [&](comm::Communicator& comm) {
    zero::Engine engine(mlp, comm, config, kSeed, kMicro, 1);
    std::vector<double> losses;
    train_steps(engine, kMicro, 2, losses);
    collect_state(engine, state, mu);
    save(engine, path);
  });
  return state;
}

// Lion's and SGD's checkpoints consolidate their one optimizer tensor each:
// --optimizer-states writes exp_avg.safetensors for Lion (its momentum, under
// lion-pytorch's and DeepSpeed's name) and momentum_buffer.safetensors for
// SGD with momentum (PyTorch's name), and nothing for a second moment.
void expect_one_state_file(const zero::EngineConfig& config, const std::string& state_name) {
  SCOPED_TRACE(state_name);
  TempDir dir;
  const FullState state = save_trained_mlp(config, dir / "ckpt");
  ASSERT_EQ(state.tensors.size(), 2u);  // master and the state
  const ConsolidateResult r = consolidate(dir / "ckpt", dir / "out", {.optimizer_states = true});
  EXPECT_EQ(r.files.size(), 2u);
  EXPECT_FALSE(fs::exists(dir / "out/exp_avg_sq.safetensors"));
  for (const auto& [file, name] : {std::pair<std::string, std::string>{"model", "master"}, {state_name, state_name}}) {
    const Safetensors s = parse_safetensors(dir / ("out/" + file + ".safetensors"));
    std::vector<float> all;
    for (const char* n : {"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) {
      const auto t = tensor(s, n);
      all.insert(all.end(), t.begin(), t.end());
    }
    EXPECT_TRUE(bitwise_equal(all, state.tensors.at(name))) << file;
  }
}

TEST(Consolidate, LionAndSgdMomentumWriteTheirOneStateTensor) {
  expect_one_state_file(lion_config(3, Dtype::bf16()), "exp_avg");
  zero::EngineConfig sgd = test_config(1);
  sgd.optimizer.kind = optim::OptimizerKind::kSgd;
  sgd.optimizer.sgd = {.momentum = 0.9};
  expect_one_state_file(sgd, "momentum_buffer");
}

// small_mlp's tensors of a consolidated safetensors file, in flat order.
std::vector<float> small_mlp_values(const fs::path& file) {
  const Safetensors s = parse_safetensors(file);
  std::vector<float> all;
  for (const char* n : {"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) {
    const auto t = tensor(s, n);
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

// 8-bit Adam's checkpoint consolidates each moment once, dequantized under
// AdamW's name: exp_avg[i] = signed code[q] * the scale of i's block, the
// optimizer's own float product; the codes and scales get no files.
TEST(Consolidate, Adam8bitWritesItsMomentsDequantized) {
  TempDir dir;
  const FullState state = save_trained_mlp(adam8bit_config(3, Dtype::bf16()), dir / "ckpt");
  const ConsolidateResult r = consolidate(dir / "ckpt", dir / "out", {.optimizer_states = true});
  EXPECT_EQ(r.files.size(), 3u);
  EXPECT_FALSE(fs::exists(dir / "out/exp_avg_q8.safetensors"));
  EXPECT_FALSE(fs::exists(dir / "out/exp_avg_absmax.safetensors"));
  const std::vector<size_t> units = {12 * 17 + 17, 17 * 9 + 9, 9 * 5 + 5};  // small_mlp's units (< one block each)
  for (const std::string moment : {"exp_avg", "exp_avg_sq"}) {
    const optim::quant8::DynamicMap& map =
        moment == "exp_avg" ? optim::quant8::signed_map() : optim::quant8::unsigned_map();
    std::vector<float> want;
    const std::vector<float>& codes = state.tensors.at(moment + "_q8");
    const std::vector<float>& scales = state.tensors.at(moment + "_absmax");
    size_t at = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      for (size_t i = 0; i < units[u]; ++i, ++at) want.push_back(map.code[static_cast<size_t>(codes[at])] * scales[u]);
    }
    const std::vector<float> all = small_mlp_values(dir / ("out/" + moment + ".safetensors"));
    EXPECT_TRUE(bitwise_equal(all, want)) << moment;
    EXPECT_GT(*std::max_element(all.begin(), all.end()), 0.0f) << moment;
  }
}

// With units in fp32 moments (small_mlp's second and third here), each
// moment's file takes those units' fp32 values as they are and the 8-bit
// unit's dequantized: one exp_avg and one exp_avg_sq file.
TEST(Consolidate, Adam8bitWithFp32UnitsWritesEachMomentOnce) {
  TempDir dir;
  const FullState state = save_trained_mlp(adam8bit_mixed_config(3, Dtype::bf16()), dir / "ckpt");
  EXPECT_EQ(read_manifest(resolve_checkpoint(dir / "ckpt")).format_version, 3u);
  const ConsolidateResult r = consolidate(dir / "ckpt", dir / "out", {.optimizer_states = true});
  EXPECT_EQ(r.files.size(), 3u);
  const std::vector<size_t> units = {12 * 17 + 17, 17 * 9 + 9, 9 * 5 + 5};
  for (const std::string moment : {"exp_avg", "exp_avg_sq"}) {
    const optim::quant8::DynamicMap& map =
        moment == "exp_avg" ? optim::quant8::signed_map() : optim::quant8::unsigned_map();
    // collect_state: the 8-bit tensors hold zeros where a unit keeps fp32, and the reverse.
    const std::vector<float>& codes = state.tensors.at(moment + "_q8");
    const std::vector<float>& scales = state.tensors.at(moment + "_absmax");
    const std::vector<float>& plain = state.tensors.at(moment);
    std::vector<float> want;
    size_t at = 0;
    for (size_t u = 0; u < units.size(); ++u) {
      for (size_t i = 0; i < units[u]; ++i, ++at) {
        want.push_back(u == 0 ? map.code[static_cast<size_t>(codes[at])] * scales[u] : plain[at]);
      }
    }
    const std::vector<float> all = small_mlp_values(dir / ("out/" + moment + ".safetensors"));
    EXPECT_TRUE(bitwise_equal(all, want)) << moment;
    // Both kinds of unit hold nonzero moments.
    EXPECT_GT(*std::max_element(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(units[0])), 0.0f) << moment;
    EXPECT_GT(*std::max_element(all.begin() + static_cast<std::ptrdiff_t>(units[0]), all.end()), 0.0f) << moment;
  }
}

// Adafactor's statistics consolidate packed, one fp32 per parameter under
// the model's tensor names: a matrix's row statistics, then its column
// statistics, at its start (zeros after), v for the vectors.
TEST(Consolidate, AdafactorWritesItsPackedStatistics) {
  TempDir dir;
  const FullState state = save_trained_mlp(adafactor_config(3, Dtype::bf16()), dir / "ckpt");
  const ConsolidateResult r = consolidate(dir / "ckpt", dir / "out", {.optimizer_states = true});
  EXPECT_EQ(r.files.size(), 2u);
  const Safetensors s = parse_safetensors(dir / "out/exp_avg_sq_factored.safetensors");
  std::vector<float> all;
  for (const char* n : {"fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}) {
    const auto t = tensor(s, n);
    all.insert(all.end(), t.begin(), t.end());
  }
  EXPECT_TRUE(bitwise_equal(all, state.tensors.at("exp_avg_sq_factored")));
  // fc0.weight is 17 x 12: 17 + 12 statistics, all > 0 after a step, then zeros.
  const auto w = tensor(s, "fc0.weight");
  for (size_t i = 0; i < 29; ++i) EXPECT_GT(w[i], 0.0f) << i;
  for (size_t i = 29; i < w.size(); ++i) EXPECT_EQ(w[i], 0.0f) << i;
}

// The point of streaming: a deep model is consolidated through a buffer of
// its largest piece (here one layer's fcw, bigger than wte), not of Φ.
TEST(Consolidate, DeepGptStreamsThroughItsLargestTensorNotTheModel) {
  TempDir dir;
  const model::GptConfig g{.max_seq_len = 8, .vocab = 30, .padded_vocab = 32, .layers = 12, .heads = 2, .channels = 16};
  const model::Gpt gpt(g);
  save_trained_gpt(g, 2, 2, Dtype::bf16(), dir / "ckpt");
  const ConsolidateResult r = consolidate(dir / "ckpt", dir / "out", {.optimizer_states = true});
  const size_t fcw = 4 * 16 * 16;
  ASSERT_EQ(largest_piece(export_tensors(gpt_model(g))), fcw);
  // The HF layout writes fcw transposed: the block (all 64 rows) plus one
  // column of it, the run written at a time.
  EXPECT_EQ(r.stream_buffer_bytes, 4 * (fcw + 4 * 16));
  EXPECT_LT(r.stream_buffer_bytes * g.layers, 4 * gpt.num_params());  // well under one full copy
  EXPECT_EQ(r.files.size(), 6u);
}

// Streaming from the shards writes the same bytes as writing from one flat
// copy of each tensor, for every state file and llm.c's.
TEST(Consolidate, StreamedFilesEqualWritingFromAFlatCopy) {
  TempDir dir;
  const model::GptConfig g{.max_seq_len = 8, .vocab = 30, .padded_vocab = 32, .layers = 3, .heads = 2, .channels = 8};
  save_trained_gpt(g, 3, 3, Dtype::bf16(), dir / "ckpt");
  consolidate(dir / "ckpt", dir / "out", {.optimizer_states = true});

  const std::string ckpt = resolve_checkpoint(dir / "ckpt");
  const Manifest m = read_manifest(ckpt);
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"source", "zerodp checkpoint"}, {"step", std::to_string(m.steps)}, {"model", m.model_json}};
  const std::vector<ExportTensor> tensors = export_tensors(gpt_model(g));
  CheckpointReader reader(ckpt, m);
  fs::create_directories(dir / "flat");
  ASSERT_EQ(m.tensors.size(), 3u);  // master, exp_avg, exp_avg_sq
  for (size_t t = 0; t < m.tensors.size(); ++t) {
    const std::vector<float> flat = read_full_tensor(reader, t);
    const std::string file = t == 0 ? "model.safetensors" : m.tensors[t] + ".safetensors";
    write_safetensors(dir / ("flat/" + file), tensors, flat, metadata);
    EXPECT_EQ(read_bytes(dir / ("out/" + file)), read_bytes(dir / ("flat/" + file))) << file;
    if (t == 0) {
      write_llmc_model(dir / "flat/model.bin", g, tensors, flat);
      EXPECT_EQ(read_bytes(dir / "out/model.bin"), read_bytes(dir / "flat/model.bin"));
    }
  }
  // The flat form still refuses a copy shorter than the tensors' pieces.
  const std::vector<float> short_flat(model::gpt_num_params(g) - 1);
  EXPECT_THROW(write_llmc_model(dir / "flat/short.bin", g, tensors, short_flat), ShapeError);
}

TEST(Consolidate, ExportTensorsCoverTheFlatBufferOnce) {
  const model::GptConfig g{.max_seq_len = 5, .vocab = 10, .padded_vocab = 12, .layers = 3, .heads = 1, .channels = 4};
  std::vector<int> hits(model::gpt_num_params(g));
  for (const auto& t : export_tensors(gpt_model(g))) {
    for (const auto& p : t.pieces) {
      for (size_t i = 0; i < p.count; ++i) ++hits.at(p.offset + i);
    }
  }
  for (size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i], 1) << i;
}

}  // namespace
}  // namespace zerodp::weights::testing
