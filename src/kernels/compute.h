// SPDX-License-Identifier: Apache-2.0
// The compute precision of the model's matrix products (`--compute`), and
// matmul(), the product the model's kernels call:
//   fp32  gemm(): OpenBLAS's sgemm (the default; the same bits on every
//         CPU for a given OpenBLAS kernel);
//   bf16  gemm_bf16(): the operands rounded to bf16, their products summed
//         in fp32 (autocast's bf16 product), on the CPU's bf16 units where
//         the SIMD level has them (avx512bf16), else in portable C++ with
//         the same bits.
// Everything else (norms, softmax, activations, the loss, the optimizer)
// stays fp32 either way. The precision is the calling thread's, as
// autocast's is: the engine sets it on its rank thread for a step
// (ScopedCompute), so the kernels keep their signatures.
// Thread-safety: each thread has its own precision.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

#include "kernels/gemm.h"
#include "kernels/weights.h"

namespace zerodp::kernels {

enum class Compute : uint8_t { kFp32, kBf16 };

// "fp32", "bf16": the names --compute takes.
const char* compute_name(Compute compute);
std::optional<Compute> parse_compute(std::string_view name);

// This thread's precision: fp32 unless a ScopedCompute on it says otherwise.
Compute thread_compute();

// Makes `compute` this thread's precision until destroyed (nesting restores).
class ScopedCompute {
 public:
  explicit ScopedCompute(Compute compute);
  ~ScopedCompute();
  ScopedCompute(const ScopedCompute&) = delete;
  ScopedCompute& operator=(const ScopedCompute&) = delete;

 private:
  Compute previous_;
};

// C = alpha * op(A) @ op(B) + beta * C (gemm()'s arguments) at this
// thread's precision.
void matmul(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
            int ldb, float beta, float* c, int ldc);
// The same with B weights of either type (weights.h): fp32 ones as above;
// bf16 ones read in place by the bf16 product, which gives the bits it
// gives their fp32 widening. At fp32 compute, bf16 weights are a
// ConfigError (sgemm has no bf16 operand); nothing is written then.
void matmul(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, Weights b, int ldb,
            float beta, float* c, int ldc);

// Throws that ConfigError where this thread's products cannot read `b`
// (bf16 weights at fp32 compute): for callers that write before their
// product runs.
void check_readable(const Weights& b);

}  // namespace zerodp::kernels
