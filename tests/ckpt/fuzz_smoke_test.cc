// SPDX-License-Identifier: Apache-2.0
// Runs the libFuzzer entry point of tests/fuzz/ckpt_fuzz.cc on a fixed set
// of inputs (valid, random, and mutations of valid ones), so that the fuzz
// target builds and runs clean in every build, clang or not. Any exception
// other than zerodp::Error escapes and fails the test.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ckpt/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace zerodp::ckpt {
namespace {

int feed(int mode, const std::vector<uint8_t>& body) {
  std::vector<uint8_t> in{static_cast<uint8_t>(mode)};
  in.insert(in.end(), body.begin(), body.end());
  return LLVMFuzzerTestOneInput(in.data(), in.size());
}

TEST(FuzzSmoke, RandomAndMutatedInputsRunClean) {
  std::mt19937 rng(2024);
  Manifest m;
  m.model_json = R"({"kind":"mlp","widths":[1,2,1]})";
  m.units = {{"fc0", 5}, {"fc1", 3}};
  m.num_params = 8;
  m.tensors = {"master"};
  m.shards = {{shard_file_name(0, 1), 10, 1}};
  const std::string manifest = manifest_to_json(m);
  for (int i = 0; i < 600; ++i) {
    const int mode = i % 4;
    std::vector<uint8_t> body;
    if (mode == 0) {
      body.assign(manifest.begin(), manifest.end());
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits; ++e) body[rng() % body.size()] = static_cast<uint8_t>(rng());
    } else {
      body.resize(rng() % 400);
      for (auto& b : body) b = static_cast<uint8_t>(rng());
    }
    EXPECT_EQ(feed(mode, body), 0);
  }
  EXPECT_EQ(feed(3, {}), 0);  // the valid fixture: reads cleanly
}

}  // namespace
}  // namespace zerodp::ckpt
