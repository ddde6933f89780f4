// SPDX-License-Identifier: Apache-2.0
// Internal to comm/reduce_*.cc: the fused sum of the ordered reduction as
// generic vector code (GCC vector extensions, 16 fp32 lanes), instantiated
// once per SIMD level in that level's file with an `Isa` policy:
//
//   struct Isa {
//     static constexpr bool kStream;       // streaming (non-temporal) stores exist
//     static void stream_fp32x16(float* p, Vec16 v);   // REQUIRES p 64-byte aligned
//     static void stream_64_bytes(std::byte* dst, const std::byte* src);
//     static void fence();
//     static constexpr bool kFp16;         // fp16 lanes convert in hardware
//     static Vec16 load_fp16x16(const uint16_t* p);
//     static void store_fp16x16(uint16_t* p, Vec16 v);
//   };
//
// Everything here has internal linkage, and nothing calls an inline function
// of a shared header: a copy compiled with one level's flags could otherwise
// be the one the linker keeps for every caller. Lanes are independent IEEE
// operations in the same order at every level, so every level gives the
// same bits (reduce.h states the rule). Tails and unaligned heads go through
// zero-padded 16-lane buffers, so no scalar conversion code is needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "comm/reduce_kernels.h"

namespace zerodp::comm::reduce_kernels {
// Internal linkage on purpose (see above): each level's file gets its own copy.
namespace {  // NOLINT(cert-dcl59-cpp)

using Vec16 = float __attribute__((vector_size(64)));
using U16x16 = uint16_t __attribute__((vector_size(32)));
using U32x16 = uint32_t __attribute__((vector_size(64)));
using I32x16 = int32_t __attribute__((vector_size(64)));

// Storage types of the three dtypes, as plain bits.
struct Bf16Bits {
  uint16_t bits;
};
struct Fp16Bits {
  uint16_t bits;
};

// Streaming stores pay for large outputs only (they skip reading each line
// before writing it, but bypass the cache that a small output is about to be
// used from).
constexpr size_t kStreamBytes = size_t{4} << 20;

// In halves of eight lanes: a 16-lane vector lives in two registers below
// AVX-512, and GCC 12 moves a 64-byte memcpy of one through the stack
// (measured: the AVX2 reduction 8x slower than this).
using Vec8 = float __attribute__((vector_size(32)));

inline Vec16 load_fp32x16(const float* p) {
  Vec8 lo, hi;
  std::memcpy(&lo, p, sizeof lo);
  std::memcpy(&hi, p + 8, sizeof hi);
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

inline void store_fp32x16(float* p, Vec16 v) {
  const Vec8 lo = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7);
  const Vec8 hi = __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
  std::memcpy(p, &lo, sizeof lo);
  std::memcpy(p + 8, &hi, sizeof hi);
}

// bf16 <-> fp32 on 16 lanes with dtype.h's bits: widening is a shift (NaNs
// made quiet), narrowing rounds to nearest even (NaNs stay NaN, quiet).
inline Vec16 load_bf16x16(const Bf16Bits* p) {
  U16x16 h;
  std::memcpy(&h, p, sizeof h);
  U32x16 w = __builtin_convertvector(h, U32x16) << 16;
  const U32x16 nan = reinterpret_cast<U32x16>((w & 0x7FFFFFFFu) > 0x7F800000u);
  w |= nan & 0x00400000u;
  return reinterpret_cast<Vec16>(w);
}

inline void store_bf16x16(Bf16Bits* p, Vec16 f) {
  const U32x16 x = reinterpret_cast<U32x16>(f);
  const U32x16 nan = reinterpret_cast<U32x16>((x & 0x7FFFFFFFu) > 0x7F800000u);
  const U32x16 rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  const U32x16 quiet = (x >> 16) | 0x0040u;
  const U16x16 h = __builtin_convertvector((nan & quiet) | (~nan & rounded), U16x16);
  std::memcpy(static_cast<void*>(p), &h, sizeof h);
}

// NaN sums become the one canonical quiet NaN: which payload an addition of
// two NaNs keeps is the compiler's and the instruction set's choice.
// NaN is a magnitude above infinity's bits, found with a subtraction and a
// shift rather than a comparison: GCC 12 splits 64-byte vector arithmetic
// into two ymm halves at the AVX2 level but compares such vectors one lane
// at a time (a 4x slower reduction, measured by bench comm).
inline Vec16 canonical_nan(Vec16 v) {
  const I32x16 bits = reinterpret_cast<I32x16>(v);
  const I32x16 nan = (0x7F800000 - (bits & 0x7FFFFFFF)) >> 31;  // -1 in a NaN lane, else 0
  return reinterpret_cast<Vec16>((nan & 0x7FC00000) | (~nan & bits));
}

// The canonical pairwise order of the sum (reduce.h): the sum of
// contributions [0, n) is the sum of its largest power-of-two prefix plus
// the sum of the rest, each part summed the same way. A binary counter over
// the contributions in rank order builds it: `held` blocks of falling
// power-of-two sizes, two equal neighbours merging left + right as the next
// arrives, the rest folded right to left at the end.
template <class Load>
inline Vec16 tree_sum(size_t n, Load load) {
  Vec16 partial[64];
  size_t size[64];
  size_t held = 0;
  for (size_t k = 0; k < n; ++k) {
    Vec16 carry = load(k);
    size_t s = 1;
    while (held > 0 && size[held - 1] == s) {
      carry = partial[held - 1] + carry;
      s *= 2;
      --held;
    }
    partial[held] = carry;
    size[held] = s;
    ++held;
  }
  Vec16 acc = partial[held - 1];
  for (size_t h = held - 1; h-- > 0;) acc = partial[h] + acc;
  return acc;
}

template <class Isa>
inline Vec16 load_x16(const float* p) {
  return load_fp32x16(p);
}
template <class Isa>
inline Vec16 load_x16(const Bf16Bits* p) {
  return load_bf16x16(p);
}
template <class Isa>
inline Vec16 load_x16(const Fp16Bits* p) {
  return Isa::load_fp16x16(&p->bits);
}
template <class Isa>
inline void store_x16(float* p, Vec16 v) {
  store_fp32x16(p, v);
}
template <class Isa>
inline void store_x16(Bf16Bits* p, Vec16 v) {
  store_bf16x16(p, v);
}
template <class Isa>
inline void store_x16(Fp16Bits* p, Vec16 v) {
  Isa::store_fp16x16(&p->bits, v);
}

// Whether every output has the same offset within a 64-byte line.
template <typename T>
bool same_line_offset(T* const* outs, size_t m) {
  const auto first = reinterpret_cast<uintptr_t>(outs[0]) % 64;
  for (size_t o = 1; o < m; ++o) {
    if (reinterpret_cast<uintptr_t>(outs[o]) % 64 != first) return false;
  }
  return true;
}

// The reduction of elements [i, i + len), len <= 16, through padded buffers:
// the same lanes, so the same bits as the full-vector loop.
template <class Isa, typename T>
void sum_partial(const T* const* in, size_t n, T* const* out, size_t m, size_t i, size_t len, bool average) {
  T lanes[16] = {};
  Vec16 acc = tree_sum(n, [&](size_t k) {
    std::memcpy(static_cast<void*>(lanes), in[k] + i, len * sizeof(T));
    return load_x16<Isa>(lanes);
  });
  if (average) acc = acc / (Vec16{} + static_cast<float>(n));
  store_x16<Isa>(lanes, canonical_nan(acc));
  for (size_t o = 0; o < m; ++o) std::memcpy(static_cast<void*>(out[o] + i), lanes, len * sizeof(T));
}

// out[o][i] = the pairwise sum of in[k][i] (or the average) for every output o: every
// input read once, the result written to every output, nothing staged. Each
// step loads every contribution before it stores to any output, so an output
// may be exactly one of the inputs.
template <class Isa, typename T>
void sum_fused(const T* const* in, size_t n, T* const* out, size_t m, size_t count, bool average) {
  const Vec16 vdivisor = Vec16{} + static_cast<float>(n);
  size_t i = 0;
  // fp32 outputs of 4 MiB and more are written with streaming stores, once
  // a partial head has brought every output to a 64-byte line.
  if constexpr (std::is_same_v<T, float> && Isa::kStream) {
    if (count * sizeof(float) * m >= kStreamBytes && same_line_offset(out, m)) {
      const size_t align = (64 - reinterpret_cast<uintptr_t>(out[0]) % 64) % 64 / sizeof(float);
      const size_t head = align < count ? align : count;
      if (head > 0) sum_partial<Isa>(in, n, out, m, 0, head, average);
      for (i = head; i + 16 <= count; i += 16) {
        Vec16 acc = n == 2 ? load_x16<Isa>(in[0] + i) + load_x16<Isa>(in[1] + i)
                           : tree_sum(n, [&](size_t k) { return load_x16<Isa>(in[k] + i); });
        if (average) acc = acc / vdivisor;
        acc = canonical_nan(acc);
        for (size_t o = 0; o < m; ++o) Isa::stream_fp32x16(out[o] + i, acc);
      }
      Isa::fence();
    }
  }
  if (n == 2) {  // two contributions (N = 2: the common case) without the counter: in[0] + in[1], its order
    for (; i + 16 <= count; i += 16) {
      Vec16 acc = load_x16<Isa>(in[0] + i) + load_x16<Isa>(in[1] + i);
      if (average) acc = acc / vdivisor;
      acc = canonical_nan(acc);
      for (size_t o = 0; o < m; ++o) store_x16<Isa>(out[o] + i, acc);
    }
  } else {
    for (; i + 16 <= count; i += 16) {
      Vec16 acc = tree_sum(n, [&](size_t k) { return load_x16<Isa>(in[k] + i); });
      if (average) acc = acc / vdivisor;
      acc = canonical_nan(acc);
      for (size_t o = 0; o < m; ++o) store_x16<Isa>(out[o] + i, acc);
    }
  }
  if (i < count) sum_partial<Isa>(in, n, out, m, i, count - i, average);
}

// The entry every level's file exports (reduce_kernels.h), for fp32, bf16
// and (where Isa::kFp16) fp16.
template <class Isa>
bool sum_any(const void* const* ins, size_t n, void* const* outs, size_t m, size_t count, DtypeBits dtype,
             bool average) {
  switch (dtype) {
    case DtypeBits::kFp32:
      sum_fused<Isa>(reinterpret_cast<const float* const*>(ins), n, reinterpret_cast<float* const*>(outs), m, count,
                     average);
      return true;
    case DtypeBits::kBf16:
      sum_fused<Isa>(reinterpret_cast<const Bf16Bits* const*>(ins), n, reinterpret_cast<Bf16Bits* const*>(outs), m,
                     count, average);
      return true;
    case DtypeBits::kFp16:
      if constexpr (Isa::kFp16) {
        sum_fused<Isa>(reinterpret_cast<const Fp16Bits* const*>(ins), n, reinterpret_cast<Fp16Bits* const*>(outs), m,
                       count, average);
        return true;
      }
      return false;
  }
  return false;
}

// memcpy, with streaming stores for large copies where the level has them.
template <class Isa>
void copy_any(void* dst, const void* src, size_t bytes) {
  if constexpr (Isa::kStream) {
    if (bytes >= kStreamBytes) {
      auto* d = static_cast<std::byte*>(dst);
      const auto* s = static_cast<const std::byte*>(src);
      const size_t head = (64 - reinterpret_cast<uintptr_t>(d) % 64) % 64;
      std::memcpy(d, s, head);
      size_t i = head;
      for (; i + 64 <= bytes; i += 64) Isa::stream_64_bytes(d + i, s + i);
      Isa::fence();
      std::memcpy(d + i, s + i, bytes - i);
      return;
    }
  }
  std::memcpy(dst, src, bytes);
}

}  // namespace
}  // namespace zerodp::comm::reduce_kernels
