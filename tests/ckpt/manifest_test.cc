// SPDX-License-Identifier: Apache-2.0
// The manifest: round trip, its own CRC, version and field checks, and the
// shard layout arithmetic it implies.
#include "ckpt/manifest.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ckpt/crc32c.h"
#include "ckpt/format.h"
#include "core/error.h"

namespace zerodp::ckpt {
namespace {

Manifest sample() {
  Manifest m;
  m.save_id = 0xABCDEF123456ull;
  m.created_by = "zerodp test";
  m.model_kind = "mlp";
  m.model_json = R"({"kind":"mlp","widths":[3,4,2],"head":"regression"})";
  m.model_description = "mlp [3, 4, 2]";
  m.units = {{"fc0", 16}, {"fc1", 10}};
  m.num_params = 26;
  m.ranks = 3;
  m.stage = Stage::k2;
  m.dtype = Dtype::fp16();
  m.tensors = {"master", "exp_avg", "exp_avg_sq"};
  m.optimizer.kind = optim::OptimizerKind::kAdam;
  m.optimizer.adam = {.beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.3};
  m.engine_json = R"({"stage":2})";
  m.chunk_bytes = 64;
  m.steps = 17;
  m.optimizer_steps = 15;
  m.data_step = 19;
  m.scaler = {1024.0, 17, 12, 1, 0, 2};
  m.seed = 0xFFFFFFFFFFFFFFFFull;
  m.metadata = {{"data", "corpus.txt"}};
  for (int r = 0; r < 3; ++r) {
    const uint64_t bytes = ShardLayout(m.unit_counts(), 3, r, 3, 64).file_size();
    m.shards.push_back({shard_file_name(r, 3), bytes, 0xDEADBEEFu + r});
  }
  return m;
}

TEST(Manifest, RoundTrip) {
  const Manifest m = sample();
  const std::string text = manifest_to_json(m);
  const Manifest back = manifest_from_json(text, "m.json");
  EXPECT_EQ(manifest_to_json(back), text);
  EXPECT_EQ(back.seed, m.seed);
  EXPECT_EQ(back.scaler, m.scaler);
  EXPECT_EQ(back.optimizer.adam.eps, 1e-6);
  EXPECT_EQ(back.shards[2].crc32c, 0xDEADBEEFu + 2);
  EXPECT_EQ(back.tensor_index("exp_avg_sq"), 2);
  EXPECT_EQ(back.tensor_index("momentum_buffer"), -1);
}

// Manifests written before a run had one learning rate carry an "lr" in
// the optimizer record (the rate is the engine record's schedule): they
// still load, to the same optimizer.
TEST(Manifest, AnOptimizerLrOfEarlierReleasesIsAccepted) {
  const std::string text = manifest_to_json(sample());
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  j["optimizer"]["lr"] = 0.1;
  j.erase("manifest_crc32c");
  const std::string body = j.dump();
  j["manifest_crc32c"] = crc32c(body.data(), body.size());
  const Manifest back = manifest_from_json(j.dump(2), "old/manifest.json");
  EXPECT_EQ(manifest_to_json(back), text);
  EXPECT_EQ(back.optimizer.adam.beta1, 0.8);
}

TEST(Manifest, LionRoundTrip) {
  Manifest m = sample();
  m.tensors = {"master", "exp_avg"};
  m.optimizer = {.kind = optim::OptimizerKind::kLion, .lion = {.beta1 = 0.95, .beta2 = 0.98, .weight_decay = 1}};
  m.shards.clear();
  for (int r = 0; r < 3; ++r) {
    m.shards.push_back({shard_file_name(r, 3), ShardLayout(m.unit_counts(), 3, r, 2, 64).file_size(), 7u});
  }
  const std::string text = manifest_to_json(m);
  EXPECT_NE(text.find(R"("kind": "lion")"), std::string::npos) << text;
  const Manifest back = manifest_from_json(text, "m.json");
  EXPECT_EQ(manifest_to_json(back), text);
  EXPECT_EQ(back.optimizer.kind, optim::OptimizerKind::kLion);
  EXPECT_EQ(back.optimizer.lion.beta1, 0.95);
  EXPECT_EQ(back.optimizer.lion.beta2, 0.98);
  EXPECT_EQ(back.optimizer.lion.weight_decay, 1.0);
  EXPECT_EQ(back.tensor_index("exp_avg"), 1);
  EXPECT_EQ(back.tensor_index("exp_avg_sq"), -1);
  EXPECT_EQ(text.find("momentum_rounding"), std::string::npos) << text;  // fp32: nothing to round

  // A bf16 momentum and how it is rounded travel with the checkpoint.
  // (Checkpoints hold the bf16 momentum widened, under exp_avg.)
  m.optimizer.lion.bf16_momentum = true;
  m.optimizer.lion.momentum_rounding = optim::RoundingMode::kStochastic;
  const std::string bf16 = manifest_to_json(m);
  EXPECT_NE(bf16.find(R"("momentum_rounding": "stochastic")"), std::string::npos) << bf16;
  const Manifest back_bf16 = manifest_from_json(bf16, "m.json");
  EXPECT_TRUE(back_bf16.optimizer.lion.bf16_momentum);
  EXPECT_EQ(back_bf16.optimizer.lion.momentum_rounding, optim::RoundingMode::kStochastic);
  EXPECT_EQ(manifest_to_json(back_bf16), bf16);
}

// 8-bit Adam's tensors are format version 2's: codes one byte per element,
// scales one fp32 per 2048-element block of a unit, each block's scale in
// the record of the rank whose plan shard holds its first element.
TEST(Manifest, Adam8bitTensorsAreVersionTwo) {
  Manifest m = sample();
  m.tensors = {"master", "exp_avg_q8", "exp_avg_sq_q8", "exp_avg_absmax", "exp_avg_sq_absmax"};
  m.optimizer = {.kind = optim::OptimizerKind::kAdam8bit, .adam = {.beta1 = 0.85}};
  EXPECT_EQ(format_version_for(m.tensors), 2u);
  EXPECT_EQ(format_version_for(std::vector<std::string>{"master", "exp_avg", "exp_avg_sq"}), 1u);
  m.format_version = 2;
  const std::vector<TensorLayout> layouts = m.tensor_layouts();
  EXPECT_EQ(layouts[1], (TensorLayout{1, 0}));
  EXPECT_EQ(layouts[3], (TensorLayout{4, 2048}));
  m.shards.clear();
  for (int r = 0; r < 3; ++r) {
    m.shards.push_back({shard_file_name(r, 3), ShardLayout(m.unit_counts(), 3, r, layouts, 64).file_size(), 7u});
  }
  const std::string text = manifest_to_json(m);
  const Manifest back = manifest_from_json(text, "m.json");
  EXPECT_EQ(manifest_to_json(back), text);
  EXPECT_EQ(back.optimizer.kind, optim::OptimizerKind::kAdam8bit);
  EXPECT_EQ(back.optimizer.adam.beta1, 0.85);
  EXPECT_EQ(back.format_version, 2u);
  // The same tensors claimed by a version 1 manifest are refused.
  m.format_version = 1;
  EXPECT_THROW(manifest_from_json(manifest_to_json(m), "m.json"), InputFileError);
  // 8-bit Adam's settings of which units keep fp32 moments round-trip; a
  // manifest from before them (no keys) means every unit 8-bit.
  EXPECT_EQ(back.optimizer.adam.fp32_embedding, true);
  EXPECT_EQ(back.optimizer.adam.min_8bit_size, 4096u);
  {
    std::string old = text;
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(old);
    j["optimizer"].erase("fp32_embedding");
    j["optimizer"].erase("min_8bit_size");
    j.erase("manifest_crc32c");
    const std::string body = j.dump();
    j["manifest_crc32c"] = crc32c(body.data(), body.size());
    const Manifest before = manifest_from_json(j.dump(2), "m.json");
    EXPECT_FALSE(before.optimizer.adam.fp32_embedding);
    EXPECT_EQ(before.optimizer.adam.min_8bit_size, 0u);
  }
  // Blocks: 5000 elements over 3 ranks (1667, 1667, 1666): blocks 0, 1, 2
  // start at 0, 2048, 4096, in the records of ranks 0, 1 and 2.
  for (int r = 0; r < 3; ++r) {
    const comm::ShardRange b = record_range(5000, 3, r, {4, 2048});
    EXPECT_EQ(b.offset, static_cast<size_t>(r));
    EXPECT_EQ(b.count, 1u);
  }
  // Over 4 ranks ([0, 1250), [1250, 2500), [2500, 3750), [3750, 5000)) the
  // third holds no block's first element.
  EXPECT_EQ(record_range(5000, 4, 1, {4, 2048}).offset, 1u);
  EXPECT_EQ(record_range(5000, 4, 2, {4, 2048}).count, 0u);
  EXPECT_EQ(record_range(5000, 4, 3, {4, 2048}).offset, 2u);
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(Manifest, ChangedValueFailsItsCrc) {
  const std::string text = manifest_to_json(sample());
  try {
    manifest_from_json(replace(text, "\"steps\": 17", "\"steps\": 18"), "dir/manifest.json");
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(e.message().find("dir/manifest.json"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("CRC32C"), std::string::npos) << e.message();
  }
}

// Version 3: a unit lists the tensors it holds (8-bit Adam's units in fp32
// moments: master, exp_avg, exp_avg_sq); the others hold all. The records
// of the tensors a unit does not hold are empty.
TEST(Manifest, PerUnitTensorsAreVersionThree) {
  Manifest m = sample();
  m.tensors = {"master", "exp_avg", "exp_avg_sq", "exp_avg_q8", "exp_avg_sq_q8", "exp_avg_absmax", "exp_avg_sq_absmax"};
  m.optimizer = {.kind = optim::OptimizerKind::kAdam8bit, .adam = {.beta1 = 0.85}};
  m.units[0].tensors = {0, 1, 2};  // unit 1 lists none: it holds all
  EXPECT_TRUE(m.per_unit_tensors());
  EXPECT_EQ(format_version_for(m.tensors, m.per_unit_tensors()), 3u);
  m.format_version = 3;
  EXPECT_TRUE(m.holds(0, 1));
  EXPECT_FALSE(m.holds(0, 3));
  EXPECT_TRUE(m.holds(1, 1));
  EXPECT_TRUE(m.holds(1, 5));
  EXPECT_EQ(m.tensors_of(0), (std::vector<std::string>{"master", "exp_avg", "exp_avg_sq"}));
  const std::vector<TensorLayout> layouts = m.tensor_layouts();
  const std::vector<std::vector<uint32_t>> held = m.unit_tensors();
  const ShardLayout l(m.unit_counts(), 3, 0, layouts, 64, held);
  EXPECT_EQ(l.range(0, 3).count, 0u);
  EXPECT_GT(l.range(0, 1).count, 0u);
  EXPECT_GT(l.range(1, 3).count, 0u);
  EXPECT_LT(l.file_size(), ShardLayout(m.unit_counts(), 3, 0, layouts, 64).file_size());
  m.shards.clear();
  for (int r = 0; r < 3; ++r) {
    m.shards.push_back({shard_file_name(r, 3), ShardLayout(m.unit_counts(), 3, r, layouts, 64, held).file_size(), 7u});
  }
  const std::string text = manifest_to_json(m);
  const Manifest back = manifest_from_json(text, "m.json");
  EXPECT_EQ(manifest_to_json(back), text);
  EXPECT_EQ(back.unit_tensors(), held);
  // Per-unit lists in an older version, or lists that are not ascending
  // indices starting at master, are refused.
  m.format_version = 2;
  EXPECT_THROW(manifest_from_json(manifest_to_json(m), "m.json"), InputFileError);
  m.format_version = 3;
  for (const std::vector<uint32_t>& bad :
       {std::vector<uint32_t>{1, 2}, std::vector<uint32_t>{0, 2, 1}, std::vector<uint32_t>{0, 7}}) {
    Manifest b = m;
    b.units[0].tensors = bad;
    EXPECT_THROW(manifest_from_json(manifest_to_json(b), "m.json"), InputFileError);
  }
}

TEST(Manifest, FutureVersionIsAConfigError) {
  const std::string text = manifest_to_json(sample());
  try {
    manifest_from_json(replace(text, "\"format_version\": 1", "\"format_version\": 7"), "m.json");
    FAIL() << "no error";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find("version 7"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("newer"), std::string::npos) << e.message();
  }
}

TEST(Manifest, ShardSizesMustMatchTheLayout) {
  Manifest m = sample();
  m.shards[1].bytes += 4;
  try {
    manifest_from_json(manifest_to_json(m), "m.json");
    FAIL() << "no error";
  } catch (const IoError& e) {
    EXPECT_NE(e.message().find("shard 1"), std::string::npos) << e.message();
    EXPECT_NE(e.message().find("inconsistent"), std::string::npos) << e.message();
  }
}

TEST(Manifest, RejectsGarbageAndForeignJson) {
  EXPECT_THROW(manifest_from_json("", "m"), IoError);
  EXPECT_THROW(manifest_from_json("{", "m"), IoError);
  EXPECT_THROW(manifest_from_json("[1,2]", "m"), IoError);
  EXPECT_THROW(manifest_from_json(R"({"format":"other"})", "m"), IoError);
  EXPECT_THROW(manifest_from_json(R"({"format":"zerodp-checkpoint","format_version":"1"})", "m"), IoError);
}

TEST(Manifest, EveryFlippedByteIsCaughtOrHarmless) {
  // Whitespace may change without effect; anything else must be an error.
  const std::string text = manifest_to_json(sample());
  for (size_t i = 0; i < text.size(); ++i) {
    std::string t = text;
    t[i] = static_cast<char>(t[i] ^ 0x01);
    try {
      const Manifest back = manifest_from_json(t, "m");
      EXPECT_EQ(manifest_to_json(back), text) << "byte " << i << " changed the manifest silently";
    } catch (const Error&) {
    }
  }
}

TEST(ShardLayout, RecordsFollowTheUnevenShardRule) {
  const std::vector<size_t> counts = {10, 3};
  // 3 ranks: unit 0 -> 4, 3, 3; unit 1 -> 1, 1, 1. Two tensors, 8-byte chunks.
  const ShardLayout l(counts, 3, 0, 2, 8);
  EXPECT_EQ(l.range(0), (comm::ShardRange{0, 4}));
  EXPECT_EQ(l.record(0, 1).header.count, 4u);
  EXPECT_EQ(l.record(0, 1).header.num_chunks, 2u);
  EXPECT_EQ(l.record(0, 0).position, kFileHeaderBytes);
  EXPECT_EQ(l.record(0, 1).position, kFileHeaderBytes + kRecordHeaderBytes + 2 * 4 + 4 * 4);
  const ShardLayout l2(counts, 3, 2, 2, 8);
  EXPECT_EQ(l2.range(0), (comm::ShardRange{7, 3}));
  EXPECT_EQ(l2.record(1, 0).header.offset, 2u);
  uint64_t expect = kFileHeaderBytes;
  for (const uint64_t n : {3, 3, 1, 1}) expect += kRecordHeaderBytes + 4 * ((4 * n + 7) / 8) + 4 * n;
  EXPECT_EQ(l2.file_size(), expect);
}

TEST(ShardLayout, HeadersRoundTripAndCheckThemselves) {
  const FileHeader h{1, 2, 3, 4, 5, 64, 0x1234};
  auto bytes = encode(h);
  FileHeader back;
  std::string problem;
  ASSERT_TRUE(decode(bytes, back, problem)) << problem;
  EXPECT_EQ(back, h);
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto b = bytes;
    b[i] ^= std::byte{0x20};
    EXPECT_FALSE(decode(b, back, problem)) << i;
  }
  const RecordHeader r{7, 1, 3, 100, 9};
  auto rb = encode(r);
  RecordHeader rback;
  ASSERT_TRUE(decode(rb, rback, problem));
  EXPECT_EQ(rback, r);
  rb[20] ^= std::byte{1};
  EXPECT_FALSE(decode(rb, rback, problem));
  EXPECT_NE(problem.find("CRC32C"), std::string::npos);
}

}  // namespace
}  // namespace zerodp::ckpt
