// SPDX-License-Identifier: Apache-2.0
// The model kernels' element-wise loops whose speed is the vector unit's
// (GELU, SwiGLU, softmax + cross-entropy), once per SIMD level (core/simd.h): the
// portable loops of model_loops.h compiled with each level's flags, so a
// portable build runs them on AVX2 or AVX-512 where the CPU has it instead
// of its baseline SSE2, and ZERODP_SIMD picks them as it picks every other
// level's loops. Every level gives the scalar level's bits (the loops fix
// their summation order; the build forbids contraction).
// Internal to src/kernels (gelu.cc, swiglu.cc and softmax_xent.cc call them; tests
// compare the levels). Thread-safety: constant tables of pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/simd.h"

namespace zerodp::kernels {

struct ModelKernelSet {
  void (*gelu_forward)(float* out, const float* inp, size_t n);
  void (*gelu_backward)(float* dinp, const float* inp, const float* dout, size_t n);
  void (*swiglu_forward)(float* out, const float* gate, const float* up, size_t n);
  void (*swiglu_backward)(float* dgate, float* dup, const float* dout, const float* gate, const float* up, size_t n);
  // Softmax over each row's first `vocab` of `padded` entries, the padding
  // zeroed, each row's cross-entropy against its target into `losses`; the
  // grad form then turns the probabilities into (p - onehot) * dloss.
  // Returns the sum of the losses, in row order, in double.
  double (*xent_rows)(float* buf, float* losses, const int32_t* targets, size_t rows, size_t vocab, size_t padded,
                      float dloss);
  double (*xent_rows_grad)(float* buf, float* losses, const int32_t* targets, size_t rows, size_t vocab, size_t padded,
                           float dloss);
};

// The set for `level` (the scalar one for a level this build has no file for).
const ModelKernelSet& model_kernel_set(SimdLevel level = active_simd_level());

extern const ModelKernelSet kScalarModelKernels;
#if ZERODP_SIMD_X86_64
extern const ModelKernelSet kAvx2ModelKernels;
extern const ModelKernelSet kAvx512ModelKernels;
#endif

}  // namespace zerodp::kernels
