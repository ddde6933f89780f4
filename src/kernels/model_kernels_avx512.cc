// SPDX-License-Identifier: Apache-2.0
// The avx512 level's model loops: model_loops.h compiled with the AVX-512 flags
// (see CMakeLists.txt), which the compiler vectorises with that level's registers;
// called only when the CPU has them. No fused multiply-add (the build
// forbids contraction), so the bits are the scalar level's.
#include "kernels/model_kernels.h"
#include "kernels/model_loops.h"

namespace zerodp::kernels {

const ModelKernelSet kAvx512ModelKernels = kGenericModelKernels;

}  // namespace zerodp::kernels
