// SPDX-License-Identifier: Apache-2.0
#include "kernels/compute.h"

#include "core/error.h"
#include "kernels/gemm_bf16.h"

namespace zerodp::kernels {
namespace {

thread_local Compute t_compute = Compute::kFp32;

}  // namespace

const char* compute_name(Compute compute) { return compute == Compute::kBf16 ? "bf16" : "fp32"; }

std::optional<Compute> parse_compute(std::string_view name) {
  for (const Compute c : {Compute::kFp32, Compute::kBf16}) {
    if (name == compute_name(c)) return c;
  }
  return std::nullopt;
}

Compute thread_compute() { return t_compute; }

ScopedCompute::ScopedCompute(Compute compute) : previous_(t_compute) { t_compute = compute; }

ScopedCompute::~ScopedCompute() { t_compute = previous_; }

void matmul(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
            int ldb, float beta, float* c, int ldc) {
  if (t_compute == Compute::kBf16) {
    gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  } else {
    gemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
}

void matmul(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, Weights b, int ldb,
            float beta, float* c, int ldc) {
  if (!b.is_bf16()) {
    matmul(trans_a, trans_b, m, n, k, alpha, a, lda, b.fp32().data(), ldb, beta, c, ldc);
    return;
  }
  check_readable(b);
  gemm_bf16(trans_a, trans_b, m, n, k, alpha, a, lda, b.bf16().data(), ldb, beta, c, ldc);
}

void check_readable(const Weights& b) {
  ZDP_CHECK(!b.is_bf16() || t_compute == Compute::kBf16, ConfigError,
            "[matmul] bf16 weights are read only by bf16 products (--compute bf16)");
}

}  // namespace zerodp::kernels
