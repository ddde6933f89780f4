// SPDX-License-Identifier: Apache-2.0
// The scalar level's 8-bit Adam loops (adam8bit_loops.h compiled for the
// build's baseline target) and the choice of a level's set.
#include "optim/adam8bit_kernels.h"

#include "optim/adam8bit_loops.h"

namespace zerodp::optim::kernels {

const Adam8bitKernels kScalarAdam8bitKernels = kGenericAdam8bitKernels;

const Adam8bitKernels& adam8bit_kernels(SimdLevel level) {
  return *by_level<const Adam8bitKernels*>(level, {
    {SimdLevel::kScalar, &kScalarAdam8bitKernels},
#if ZERODP_SIMD_X86_64
        {SimdLevel::kAvx2, &kAvx2Adam8bitKernels}, {SimdLevel::kAvx512, &kAvx512Adam8bitKernels},
#endif
  });
}

}  // namespace zerodp::optim::kernels
