// SPDX-License-Identifier: Apache-2.0
#include "kernels/compute.h"

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

}  // namespace zerodp::kernels
