// SPDX-License-Identifier: Apache-2.0
// The compressed collectives on thread ranks (N = 1, 2, 3, 4, 7): bitwise
// against the reference and counted as packed bytes (quantized_collectives.h);
// the same bits run after run; a mismatch between a quantized and a plain
// call or between two blocks, and a scratch too small, fail every rank
// instead of hanging.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "comm/quantize.h"
#include "comm/world.h"
#include "core/aligned_buffer.h"
#include "quantized_collectives.h"
#include "support/rank_harness.h"
#include "support/same_bits.h"

namespace zerodp::comm {
namespace {

using zerodp::testing::run_on_ranks;

class QuantizedCollectives : public ::testing::TestWithParam<int> {};

TEST_P(QuantizedCollectives, MatchTheReferenceBitwiseAndCountPackedBytes) {
  std::vector<uint64_t> first(static_cast<size_t>(GetParam())), second(first.size());
  run_on_ranks(GetParam(), [&](Communicator& c) { first[c.rank()] = quantized::check_quantized_collectives(c); });
  run_on_ranks(GetParam(), [&](Communicator& c) { second[c.rank()] = quantized::check_quantized_collectives(c); });
  EXPECT_EQ(first, second) << "two runs gave different bits";
}

INSTANTIATE_TEST_SUITE_P(Ranks, QuantizedCollectives, ::testing::Values(1, 2, 3, 4, 7), [](const auto& info) {
  std::string name = "n";
  name += std::to_string(info.param);
  return name;
});

using ::zerodp::testing::contains;

// Runs `call` on `ranks` thread ranks, which must fail with a CommError;
// returns each rank's message (empty where the rank did not throw).
std::vector<std::string> errors_of(int ranks, const std::function<void(Communicator&)>& call) {
  std::vector<std::string> errors(static_cast<size_t>(ranks));
  try {
    run_thread_ranks(ranks, {.timeout = std::chrono::seconds(20)}, [&](Communicator& c) {
      try {
        call(c);
      } catch (const CommError& e) {
        errors[static_cast<size_t>(c.rank())] = e.what();
        throw;
      }
    });
    ADD_FAILURE() << "expected a mismatch";
  } catch (const CommError&) {
  }
  return errors;
}

bool any_contains(const std::vector<std::string>& errors, const std::string& part) {
  return std::any_of(errors.begin(), errors.end(), [&](const std::string& e) { return contains(e, part); });
}

TEST(QuantizedCollectives, APlainAndAQuantizedCallAreAMismatch) {
  const std::vector<std::string> errors = errors_of(3, [](Communicator& c) {
    std::vector<float> out(30, 0.0f), in(10, 1.0f);
    const QuantFormat i8{.codes = Quantization::kInt8};
    AlignedBuffer<std::byte> scratch(all_gather_quantized_scratch(30, 3, i8));
    if (c.rank() == 1) {
      c.all_gather(std::span<const float>(in), std::span<float>(out));
    } else {
      c.all_gather_quantized(std::span<const float>(in), std::span<float>(out), i8, scratch.span());
    }
  });
  EXPECT_TRUE(any_contains(errors, "mismatched collective calls"))
      << errors[0] << " | " << errors[1] << " | " << errors[2];
}

TEST(QuantizedCollectives, RanksWithDifferentBlocksAreAMismatch) {
  const std::vector<std::string> errors = errors_of(2, [](Communicator& c) {
    std::vector<float> out(512, 0.0f), in(256, 1.0f);
    const QuantFormat f{.codes = Quantization::kInt8, .block = c.rank() == 0 ? 64u : 256u};
    AlignedBuffer<std::byte> scratch(all_gather_quantized_scratch(512, 2, f));
    c.all_gather_quantized(std::span<const float>(in), std::span<float>(out), f, scratch.span());
  });
  EXPECT_TRUE(any_contains(errors, "mismatched collective calls")) << errors[0] << " | " << errors[1];
  EXPECT_TRUE(any_contains(errors, "blocks of 64")) << errors[0] << " | " << errors[1];
}

TEST(QuantizedCollectives, TooSmallAScratchIsRefused) {
  run_on_ranks(1, [&](Communicator& c) {
    std::vector<float> in(1000, 1.0f), out(1000);
    const QuantFormat i8{.codes = Quantization::kInt8};
    AlignedBuffer<std::byte> scratch(reduce_scatter_quantized_scratch(1000, 1, 0, i8) - 1);
    try {
      c.reduce_scatter_quantized(std::span<const float>(in), std::span<float>(out), ReduceOp::kSum, i8, scratch.span());
      ADD_FAILURE() << "expected an error";
    } catch (const CommError& e) {
      EXPECT_TRUE(contains(e.what(), "scratch has")) << e.what();
    }
  });
}

}  // namespace
}  // namespace zerodp::comm
