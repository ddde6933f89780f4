// SPDX-License-Identifier: Apache-2.0
// The one GEMM of zerodp: C = alpha * op(A) @ op(B) + beta * C, row-major
// fp32, through OpenBLAS's cblas_sgemm. Every matrix product in the kernels
// goes through gemm() so that there is one place that knows about the BLAS.
//
// Threading contract: OpenBLAS is switched to one thread (process-wide) the
// first time gemm() or blas_info() runs. With one thread, Debian's pthread
// OpenBLAS runs sgemm in the calling thread with per-call buffers, so rank
// threads may call gemm() concurrently; tests/kernels/gemm_test.cc proves it
// by comparing concurrent results bitwise to serial ones (see docs/models.md).
// gemm() is deterministic: the same inputs give the same bits.
#pragma once

#include <string>

namespace zerodp::kernels {

enum class Trans { kNo, kYes };

// Row-major: op(A) is [m, k], op(B) is [k, n], C is [m, n]; lda/ldb/ldc are
// the row strides of A, B and C as stored.
void gemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
          int ldb, float beta, float* c, int ldc);

struct BlasInfo {
  std::string config;  // openblas_get_config()
  std::string core;    // openblas_get_corename()
  int parallel = 0;    // openblas_get_parallel(): 0 serial, 1 pthreads, 2 OpenMP
  int threads = 0;     // openblas_get_num_threads() after zerodp set it to 1
};
BlasInfo blas_info();

// When OpenBLAS runs its generic x86-64 kernel ("Prescott": it did not
// recognise the CPU, as OpenBLAS 0.3.21 does not recognise some newer Xeons)
// on a CPU with AVX2 or AVX-512, the OPENBLAS_CORETYPE that fits the CPU
// ("Haswell" or "SkylakeX"); otherwise "". OpenBLAS reads the variable when
// it loads, so this can only be advice for the next run.
std::string better_blas_coretype();

}  // namespace zerodp::kernels
