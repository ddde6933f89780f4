// SPDX-License-Identifier: Apache-2.0
// What an op reads of its unit's parameters: fp32 values (an fp32 run's
// unit, or the engine's fp32 compute copy of a low-precision one), or the
// bf16 unit itself, where the run's products are bf16 and the family reads
// bf16 weights in place (Model::reads_bf16_weights). Then the matrices go
// to the bf16 products as they are (kernels::Weights: the product rounds
// its operands to bf16 anyway, so a bf16 weight and its fp32 widening give
// the same bits), and the few values other kernels read in fp32 (norm
// gains, biases) are widened exactly into `widened`, a scratch the engine
// lends for the call (Op::bf16_widened floats).
// Thread-safety: a value for one call on one thread.
#pragma once

#include <cstddef>
#include <span>

#include "core/dtype.h"
#include "kernels/weights.h"

namespace zerodp::model {

class UnitParams {
 public:
  // NOLINTNEXTLINE(google-explicit-constructor): every fp32 call site passes a span
  UnitParams(std::span<const float> fp32) : fp32_(fp32) {}
  UnitParams(std::span<const BFloat16> bf16, std::span<float> widened) : bf16_(bf16), widened_(widened) {}

  bool is_bf16() const { return !bf16_.empty(); }
  size_t size() const { return is_bf16() ? bf16_.size() : fp32_.size(); }
  bool empty() const { return size() == 0; }

  // Elements [offset, offset + count) as a product's weight operand.
  kernels::Weights matrix(size_t offset, size_t count) const;
  // The same elements as fp32 values: a view of an fp32 unit, or the bf16
  // values widened into the next free part of the scratch (ShapeError where
  // it is full: the family's Op::bf16_widened is short).
  std::span<const float> vector(size_t offset, size_t count);
  // The whole unit, in the form it has (ConfigError for the other form).
  std::span<const float> fp32() const;
  std::span<const BFloat16> bf16() const;

 private:
  std::span<const float> fp32_;
  std::span<const BFloat16> bf16_;
  std::span<float> widened_;
  size_t used_ = 0;  // floats of widened_ taken
};

}  // namespace zerodp::model
