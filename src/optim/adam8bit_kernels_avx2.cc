// SPDX-License-Identifier: Apache-2.0
// The avx2 level's 8-bit Adam loops: adam8bit_loops.h compiled with the AVX2
// flags (see CMakeLists.txt); called only when the CPU has them. No fused
// multiply-add (the build forbids contraction), so the bits are the scalar
// level's.
#include "optim/adam8bit_kernels.h"
#include "optim/adam8bit_loops.h"

namespace zerodp::optim::kernels {

const Adam8bitKernels kAvx2Adam8bitKernels = kGenericAdam8bitKernels;

}  // namespace zerodp::optim::kernels
