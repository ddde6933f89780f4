// SPDX-License-Identifier: Apache-2.0
// The one GEMM of zerodp: C = alpha * op(A) @ op(B) + beta * C, row-major
// fp32, through OpenBLAS's cblas_sgemm. Every matrix product in the kernels
// goes through gemm() so that there is one place that knows about the BLAS.
//
// Threading contract: OpenBLAS is switched to one thread (process-wide) the
// first time gemm() or blas_info() runs. With one thread, Debian's pthread
// OpenBLAS runs sgemm in the calling thread, packing into a buffer that each
// call in flight takes from one process-wide pool (GemmBufferHold), so rank
// threads may call gemm() concurrently; tests/kernels/gemm_test.cc proves it
// by comparing concurrent results bitwise to serial ones (see docs/models.md).
// gemm() is deterministic: the same inputs give the same bits.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/simd.h"

namespace zerodp::kernels {

enum class Trans { kNo, kYes };

// Row-major: op(A) is [m, k], op(B) is [k, n], C is [m, n]; lda/ldb/ldc are
// the row strides of A, B and C as stored.
void gemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
          int ldb, float beta, float* c, int ldc);

// OpenBLAS packs operands into buffers of one process-wide pool: a call in
// flight takes the lowest free slot, and a slot keeps the pages its calls
// touched. Which slots training fills therefore depends on how many rank
// threads' products overlap, which the scheduler decides. While a hold of k
// lives, slots 0..k-1 are taken, so this thread's gemm() calls pack into
// slot k: a warm-up can fill every slot a run will use, deterministically.
// (An OpenBLAS built with thread-local pools gives every thread its own
// slots; the hold then takes buffers it never touches, address space only.)
class GemmBufferHold {
 public:
  explicit GemmBufferHold(int slots);
  ~GemmBufferHold();
  GemmBufferHold(const GemmBufferHold&) = delete;
  GemmBufferHold& operator=(const GemmBufferHold&) = delete;

 private:
  std::vector<void*> held_;
};

struct BlasInfo {
  std::string config;        // openblas_get_config()
  std::string core;          // openblas_get_corename()
  int parallel = 0;          // openblas_get_parallel(): 0 serial, 1 pthreads, 2 OpenMP
  int threads = 0;           // openblas_get_num_threads() after zerodp set it to 1
  std::string coretype_env;  // OPENBLAS_CORETYPE as set (the user chose the core), or ""
  // One line of advice where OpenBLAS chose for itself (coretype_env empty)
  // a kernel better_blas_coretype() improves on, else "". OpenBLAS reads the
  // variable when it loads, so this can only be advice for the next run.
  std::string note;
};
BlasInfo blas_info();

// The OPENBLAS_CORETYPE that fits a CPU whose best SIMD level is `best`
// better than OpenBLAS's kernel `core`, or "". OpenBLAS picks by CPU family
// when it loads, and a family newer than the library falls to an older
// kernel (OpenBLAS 0.3.21 runs its generic Prescott on some Xeons). So:
// "SkylakeX" where the CPU runs AVX-512 and the kernel is an AVX2 or older
// one (on a Zen 5, SkylakeX's sgemm has 1.9x Haswell's rate); "Haswell"
// where the CPU runs AVX2 and the kernel predates it. A kernel name this
// list does not know gets no advice.
std::string better_blas_coretype(std::string_view core, SimdLevel best);

}  // namespace zerodp::kernels
