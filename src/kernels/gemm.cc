// SPDX-License-Identifier: Apache-2.0
#include "kernels/gemm.h"

#include <cblas.h>

#include <mutex>

#include "core/simd.h"

// OpenBLAS's buffer pool, exported by every OpenBLAS (GotoBLAS's driver
// layer, used by its LAPACK) though no public header declares it.
extern "C" void* blas_memory_alloc(int procpos);
extern "C" void blas_memory_free(void* area);

namespace zerodp::kernels {
namespace {

// One thread per caller: rank threads each run their own sgemm. With more
// than one OpenBLAS thread the library's shared thread pool would be entered
// from several rank threads at once, which serialises them (and older builds
// raced); with one thread sgemm never touches the pool.
void ensure_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

CBLAS_TRANSPOSE to_cblas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

}  // namespace

void gemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
          int ldb, float beta, float* c, int ldc) {
  ensure_single_threaded();
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

GemmBufferHold::GemmBufferHold(int slots) {
  ensure_single_threaded();
  held_.reserve(static_cast<size_t>(slots));
  for (int i = 0; i < slots; ++i) held_.push_back(blas_memory_alloc(0));
}

GemmBufferHold::~GemmBufferHold() {
  for (void* area : held_) blas_memory_free(area);
}

BlasInfo blas_info() {
  ensure_single_threaded();
  BlasInfo info;
  info.config = openblas_get_config();
  info.core = openblas_get_corename();
  info.parallel = openblas_get_parallel();
  info.threads = openblas_get_num_threads();
  return info;
}

std::string better_blas_coretype() {
  if (blas_info().core != "Prescott") return "";
  switch (best_simd_level()) {
    case SimdLevel::kAvx512:
      return "SkylakeX";
    case SimdLevel::kAvx2:
      return "Haswell";
    default:
      return "";
  }
}

}  // namespace zerodp::kernels
