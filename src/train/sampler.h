// SPDX-License-Identifier: Apache-2.0
// DistributedSampler: which token windows make up each batch.
//
// The global batch of a step is a function of (seed, step) alone: sample j
// of step s starts at a pseudo-random offset hash(seed, s, j) in the token
// stream. With G = micro_batch * grad_accum * ranks samples per step, rank r
// takes, for micro-batch m, samples [(m * ranks + r) * micro_batch, + micro_batch).
// So every rank reads a disjoint part, and runs that keep G and micro_batch
// see the same global batch whatever N is.
// Thread-safety: const methods are pure.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace zerodp::train {

struct TokenBatch {
  std::vector<int32_t> tokens;    // [B, T]
  std::vector<int32_t> targets;   // [B, T]: the next token of each position (or the given target, -1 = no loss)
  std::vector<int32_t> segments;  // [B, T] when the stream has them (packed records), else empty
};

class DistributedSampler {
 public:
  // REQUIRES stream.size() > seq_len (ConfigError otherwise, naming the
  // split, e.g. "the validation split (the last 10% of notes.txt)", and
  // both numbers). Windows start at multiples of `alignment` (records of a
  // fixed length, like the arithmetic corpus's lines, then always start at
  // position 0).
  // `targets`, when given (chat data, train/chat_data.h), is each
  // position's target, stream.size() long: a window's targets are read
  // from it at the window's places instead of the next tokens; `segments`
  // likewise each position's record id (packed records).
  DistributedSampler(std::span<const int32_t> stream, int seq_len, int micro_batch, int ranks, uint64_t seed,
                     int alignment = 1, std::string_view split = "the data", std::span<const int32_t> targets = {},
                     std::span<const int32_t> segments = {});

  // Rank r's micro-batch m of step s.
  TokenBatch batch(int64_t step, int micro, int rank) const;
  // Start offset of global sample j of step s (for tests).
  size_t window_start(int64_t step, int64_t sample) const;

 private:
  std::span<const int32_t> stream_, targets_, segments_;
  int seq_len_, micro_batch_, ranks_;
  size_t alignment_;
  uint64_t seed_;
};

}  // namespace zerodp::train
