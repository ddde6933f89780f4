// SPDX-License-Identifier: Apache-2.0
// Internal to comm/: the per-SIMD-level entries of the ordered reduction's
// fused sum and of the collectives' bulk copy. One file per level
// (reduce_scalar.cc; reduce_avx2.cc and reduce_avx512.cc on x86-64;
// reduce_neon.cc on aarch64), each the generic
// vector code of reduce_vector.h compiled with that level's flags; reduce.cc
// chooses one at run time (core/simd.h). Every level gives the same bits.
// Thread-safety: pure functions over caller memory.
#pragma once

#include <cstddef>

namespace zerodp::comm::reduce_kernels {

enum class DtypeBits { kFp32, kBf16, kFp16 };

// out[o][i] = sum over k of in[k][i] (divided by n when average) for o < m,
// i < count, per reduce.h's rule. Returns false, touching nothing, when the
// level has no fused path for the dtype (fp16 without conversion hardware).
using SumFn = bool (*)(const void* const* ins, size_t n, void* const* outs, size_t m, size_t count, DtypeBits dtype,
                       bool average);
// memcpy; large copies with streaming stores where the level has them.
using CopyFn = void (*)(void* dst, const void* src, size_t bytes);

// One level's pair. Each level's file defines its own (x86-64 builds have
// the avx2 and avx512 ones, aarch64 builds the neon one).
struct LevelKernels {
  SumFn sum;
  CopyFn copy;
};
extern const LevelKernels kScalar;
extern const LevelKernels kAvx2;
extern const LevelKernels kAvx512;
extern const LevelKernels kNeon;

}  // namespace zerodp::comm::reduce_kernels
