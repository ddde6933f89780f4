// SPDX-License-Identifier: Apache-2.0
#include "train/sampler.h"

#include <algorithm>

#include "core/error.h"

namespace zerodp::train {
namespace {

// SplitMix64: a good 64-bit mix, so neighbouring (step, sample) pairs land
// far apart in the stream.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

DistributedSampler::DistributedSampler(std::span<const int32_t> stream, int seq_len, int micro_batch, int ranks,
                                       uint64_t seed, int alignment, std::string_view split,
                                       std::span<const int32_t> targets, std::span<const int32_t> segments)
    : stream_(stream),
      targets_(targets),
      segments_(segments),
      seq_len_(seq_len),
      micro_batch_(micro_batch),
      ranks_(ranks),
      alignment_(static_cast<size_t>(std::max(1, alignment))),
      seed_(seed) {
  ZDP_CHECK(stream.size() > static_cast<size_t>(seq_len), ConfigError,
            "[data] {} has {} tokens, too few for one sequence of {} (+1): use a longer file or a smaller --seq-len",
            split, stream.size(), seq_len);
  ZDP_CHECK(targets.empty() || targets.size() == stream.size(), ConfigError, "[data] {} has {} targets for {} tokens",
            split, targets.size(), stream.size());
  ZDP_CHECK(segments.empty() || segments.size() == stream.size(), ConfigError,
            "[data] {} has {} record ids for {} tokens", split, segments.size(), stream.size());
}

size_t DistributedSampler::window_start(int64_t step, int64_t sample) const {
  // Starts that leave room for seq_len tokens and their next tokens.
  const uint64_t starts = stream_.size() - static_cast<size_t>(seq_len_);
  const uint64_t windows = (starts + alignment_ - 1) / alignment_;
  return mix(mix(seed_ ^ mix(static_cast<uint64_t>(step))) + static_cast<uint64_t>(sample)) % windows * alignment_;
}

TokenBatch DistributedSampler::batch(int64_t step, int micro, int rank) const {
  TokenBatch b;
  const size_t t = static_cast<size_t>(seq_len_);
  b.tokens.resize(static_cast<size_t>(micro_batch_) * t);
  b.targets.resize(b.tokens.size());
  if (!segments_.empty()) b.segments.resize(b.tokens.size());
  const int64_t first = (static_cast<int64_t>(micro) * ranks_ + rank) * micro_batch_;
  for (int i = 0; i < micro_batch_; ++i) {
    const size_t start = window_start(step, first + i);
    for (size_t k = 0; k < t; ++k) {
      b.tokens[i * t + k] = stream_[start + k];
      b.targets[i * t + k] = targets_.empty() ? stream_[start + k + 1] : targets_[start + k];
      if (!segments_.empty()) b.segments[i * t + k] = segments_[start + k];
    }
  }
  return b;
}

}  // namespace zerodp::train
