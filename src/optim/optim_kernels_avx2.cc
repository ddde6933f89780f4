// SPDX-License-Identifier: Apache-2.0
// The avx2 level's optimizer loops: optim_loops.h compiled with the AVX2
// flags (see CMakeLists.txt), which the compiler vectorises on eight lanes;
// called only when the CPU has them. No fused multiply-add (the build
// forbids contraction), so the bits are the scalar level's.
#include "optim/optim_kernels.h"
#include "optim/optim_loops.h"

namespace zerodp::optim::kernels {

const KernelSet kAvx2Kernels = kGenericKernels;

}  // namespace zerodp::optim::kernels
