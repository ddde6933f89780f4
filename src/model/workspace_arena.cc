// SPDX-License-Identifier: Apache-2.0
#include "model/workspace_arena.h"

#include <algorithm>

#include "core/error.h"
#include "kernels/softmax_xent.h"

namespace zerodp::model::detail {
namespace {

size_t padded(size_t count) { return (count + kArenaAlignFloats - 1) / kArenaAlignFloats * kArenaAlignFloats; }

}  // namespace

void ArenaCarver::book(size_t floats, bool is_activation) {
  (is_activation ? activation_floats_ : scratch_floats_) += padded(floats);
  total_ += padded(floats);
}

void ArenaCarver::add(std::span<float>& slot, size_t count, bool is_activation) {
  requests_.push_back({.slot = &slot, .count = count});
  book(count, is_activation);
}

void ArenaCarver::add(std::span<BFloat16>& slot, size_t count, bool is_activation) {
  static_assert(sizeof(BFloat16) * 2 == sizeof(float) && alignof(BFloat16) <= alignof(float));
  requests_.push_back({.bf16_slot = &slot, .count = count});
  book((count + 1) / 2, is_activation);
}

AlignedBuffer<float> ArenaCarver::carve() {
  AlignedBuffer<float> arena(total_);
  size_t o = 0;
  for (const Request& r : requests_) {
    if (r.slot != nullptr) {
      *r.slot = std::span<float>(arena.data() + o, r.count);
      o += padded(r.count);
    } else {
      // The arena is raw storage (AlignedBuffer does not construct floats
      // in it); these elements are only ever read and written as BFloat16.
      *r.bf16_slot = std::span<BFloat16>(reinterpret_cast<BFloat16*>(arena.data() + o), r.count);
      o += padded((r.count + 1) / 2);
    }
  }
  return arena;
}

TokenBatchInfo copy_token_batch(const Batch& batch, int micro_batch, int seq_len, int vocab, const char* op,
                                std::vector<int32_t>& tokens, std::vector<int32_t>& targets) {
  const size_t N = size_t(micro_batch) * seq_len;
  ZDP_CHECK(batch.tokens.size() == N, ShapeError,
            "[{}] batch has {} tokens, the workspace takes micro batch {} x sequence {} = {}", op, batch.tokens.size(),
            micro_batch, seq_len, N);
  ZDP_CHECK(batch.targets.empty() || batch.targets.size() == N, ShapeError,
            "[{}] batch has {} targets, expected {} (one per token) or none", op, batch.targets.size(), N);
  for (int32_t t : batch.tokens) {
    ZDP_CHECK(t >= 0 && t < vocab, ShapeError, "[{}] token id {} outside the vocabulary [0, {})", op, t, vocab);
  }
  TokenBatchInfo info{.has_targets = !batch.targets.empty()};
  for (int32_t t : batch.targets) {
    ZDP_CHECK(t == kernels::kIgnoreTarget || (t >= 0 && t < vocab), ShapeError,
              "[{}] target id {} outside the vocabulary [0, {}) and not the ignore id {}", op, t, vocab,
              kernels::kIgnoreTarget);
    if (t == kernels::kIgnoreTarget) ++info.masked_targets;
  }
  tokens.assign(batch.tokens.begin(), batch.tokens.end());
  if (info.has_targets) targets.assign(batch.targets.begin(), batch.targets.end());
  return info;
}

}  // namespace zerodp::model::detail
