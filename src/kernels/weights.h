// SPDX-License-Identifier: Apache-2.0
// A weight operand of the model's matrix products (linear.h, matmul()): fp32
// values, or bf16 values read in place, so that a parameter unit the engine
// holds in bf16 need not be widened into an fp32 copy first. Only the bf16
// products (--compute bf16) read bf16 weights: they round every operand to
// bf16 anyway, and read a bf16 weight as exactly its fp32 widening (the
// same bits as from an fp32 copy of it); sgemm has no bf16 operand.
// A Weights is a view (a pointer and a size), as std::span is: the values
// stay the caller's.
// Thread-safety: a value type; reading one from many threads is safe.
#pragma once

#include <cstddef>
#include <span>
#include <type_traits>
#include <utility>

#include "core/dtype.h"

namespace zerodp::kernels {

class Weights {
 public:
  Weights() = default;
  // Implicit from anything that converts to a span of fp32 values (a span,
  // a vector, a buffer), so the fp32 call sites of the products keep their
  // arguments. (enable_if, not a requires clause: clang-format 14 and
  // clang-tidy 14 read it.)
  template <typename Values, typename = std::enable_if_t<std::is_convertible_v<Values&&, std::span<const float>>>>
  Weights(Values&& fp32)  // NOLINT(google-explicit-constructor): implicit by design
      : Weights(std::span<const float>(std::forward<Values>(fp32)), kFp32Tag{}) {}
  // Explicit: bf16 weights go only where a caller means them to.
  explicit Weights(std::span<const BFloat16> bf16) : data_(bf16.data()), size_(bf16.size()), bf16_(true) {}

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  bool is_bf16() const { return bf16_; }

  // The values as what they are; asking for the other type is a ConfigError
  // (nothing converts them on the way).
  std::span<const float> fp32() const;
  std::span<const BFloat16> bf16() const;

  // `count` values from `offset` (ShapeError past the end), of the same type.
  Weights subspan(size_t offset, size_t count) const;

 private:
  struct kFp32Tag {};
  Weights(std::span<const float> fp32, kFp32Tag) : data_(fp32.data()), size_(fp32.size()) {}

  const void* data_ = nullptr;
  size_t size_ = 0;
  bool bf16_ = false;
};

}  // namespace zerodp::kernels
