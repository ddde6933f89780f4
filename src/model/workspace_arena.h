// SPDX-License-Identifier: Apache-2.0
// Internal: how a family's workspace lays out its tensors. Collects (slice,
// size) requests, then carves them from one 64-byte-aligned arena, each
// slice 64-byte aligned (so recomputed and stored activations see the same
// alignment and the same GEMM code paths: bitwise-equal results), and
// counts the bytes of kept activations and of scratch apart, as
// Workspace::activation_bytes() and scratch_bytes() report them.
// Thread-safety: used by one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/dtype.h"
#include "model/model.h"

namespace zerodp::model::detail {

inline constexpr size_t kArenaAlignFloats = 16;  // 64 bytes

class ArenaCarver {
 public:
  // `slot` is set by carve(); it must outlive that call.
  void add(std::span<float>& slot, size_t count, bool is_activation);
  // bf16 elements, carved from the same arena (two to a float, 64-byte
  // aligned like the rest).
  void add(std::span<BFloat16>& slot, size_t count, bool is_activation);
  AlignedBuffer<float> carve();
  size_t activation_bytes() const { return activation_floats_ * sizeof(float); }
  size_t scratch_bytes() const { return scratch_floats_ * sizeof(float); }

 private:
  struct Request {
    std::span<float>* slot = nullptr;  // or
    std::span<BFloat16>* bf16_slot = nullptr;
    size_t count = 0;  // elements of the slot's type
  };
  void book(size_t floats, bool is_activation);
  std::vector<Request> requests_;
  size_t activation_floats_ = 0, scratch_floats_ = 0, total_ = 0;
};

struct TokenBatchInfo {
  bool has_targets = false;
  int masked_targets = 0;  // targets equal to the ignore id (-1)
};

// A token model's micro-batch (tokens and, optionally, next-token targets,
// [B*T] each) checked against the workspace's B*T and the vocabulary and
// copied in; a target may also be the ignore id -1 (no loss there).
// ShapeError, op-prefixed ("[gpt]", "[llama]"), on a size or an id that does
// not fit.
TokenBatchInfo copy_token_batch(const Batch& batch, int micro_batch, int seq_len, int vocab, const char* op,
                                std::vector<int32_t>& tokens, std::vector<int32_t>& targets);

}  // namespace zerodp::model::detail
