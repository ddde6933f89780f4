// SPDX-License-Identifier: Apache-2.0
// Internal to comm/reduce_*.cc: the fused sum of the ordered reduction as
// generic vector code (GCC vector extensions), instantiated once per SIMD
// level in that level's file with an `Isa` policy whose kLanes is the
// level's register width in fp32 lanes (V = VecF<kLanes>):
//
//   struct Isa {
//     static constexpr int kLanes;         // 4, 8 or 16: one register of the level
//     static constexpr bool kStream;       // streaming (non-temporal) stores exist
//     static void stream_fp32(float* p, V v);   // REQUIRES p aligned to sizeof(V)
//     static void stream_64_bytes(std::byte* dst, const std::byte* src);
//     static void fence();
//     static constexpr bool kFp16;         // fp16 lanes convert in hardware
//     static V load_fp16(const uint16_t* p);
//     static void store_fp16(uint16_t* p, V v);
//   };
//
// Everything here has internal linkage, and nothing calls an inline function
// of a shared header: a copy compiled with one level's flags could otherwise
// be the one the linker keeps for every caller. Lanes are independent IEEE
// operations in the same order at every level and width, so every level
// gives the same bits (reduce.h states the rule). Tails and unaligned heads
// go through zero-padded one-vector buffers, so no scalar conversion code is
// needed. One register per vector, not a wider vector split by the compiler:
// GCC 12 moves 16-lane vectors through the stack at AVX2 (measured: the
// AVX2 reduce-scatter 3-5x slower at cache-resident sizes than 8 lanes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "comm/reduce_kernels.h"

namespace zerodp::comm::reduce_kernels {
// Internal linkage on purpose (see above): each level's file gets its own copy.
namespace {  // NOLINT(cert-dcl59-cpp)

// The vector types of L fp32 lanes. Member typedefs: an alias template
// drops GCC's vector_size attribute, a class template's typedef keeps it.
template <int L>
struct Lanes {
  typedef float F __attribute__((vector_size(4 * L)));       // NOLINT(modernize-use-using)
  typedef uint16_t U16 __attribute__((vector_size(2 * L)));  // NOLINT(modernize-use-using)
  typedef uint32_t U32 __attribute__((vector_size(4 * L)));  // NOLINT(modernize-use-using)
  typedef int32_t I32 __attribute__((vector_size(4 * L)));   // NOLINT(modernize-use-using)
};
template <int L>
using VecF = typename Lanes<L>::F;

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

template <int L>
inline VecF<L> load_fp32(const float* p) {
  VecF<L> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <int L>
inline void store_fp32(float* p, VecF<L> v) {
  std::memcpy(p, &v, sizeof v);
}

// bf16 <-> fp32 with dtype.h's bits: widening is a shift (NaNs made quiet),
// narrowing rounds to nearest even (NaNs stay NaN, quiet).
template <int L>
inline VecF<L> load_bf16(const Bf16Bits* p) {
  using U16 = typename Lanes<L>::U16;
  using U32 = typename Lanes<L>::U32;
  U16 h;
  std::memcpy(&h, p, sizeof h);
  U32 w = __builtin_convertvector(h, U32) << 16;
  const U32 nan = reinterpret_cast<U32>((w & 0x7FFFFFFFu) > 0x7F800000u);
  w |= nan & 0x00400000u;
  return reinterpret_cast<VecF<L>>(w);
}

template <int L>
inline void store_bf16(Bf16Bits* p, VecF<L> f) {
  using U16 = typename Lanes<L>::U16;
  using U32 = typename Lanes<L>::U32;
  const U32 x = reinterpret_cast<U32>(f);
  const U32 nan = reinterpret_cast<U32>((x & 0x7FFFFFFFu) > 0x7F800000u);
  const U32 rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  const U32 quiet = (x >> 16) | 0x0040u;
  const U16 h = __builtin_convertvector((nan & quiet) | (~nan & rounded), U16);
  std::memcpy(static_cast<void*>(p), &h, sizeof h);
}

// NaN sums become the one canonical quiet NaN: which payload an addition of
// two NaNs keeps is the compiler's and the instruction set's choice.
// NaN is a magnitude above infinity's bits, found with a subtraction and a
// shift rather than a comparison (GCC 12 compared 16-lane vectors one lane at
// a time at AVX2; the integer form is cheap at every width).
template <int L>
inline VecF<L> canonical_nan(VecF<L> v) {
  using I32 = typename Lanes<L>::I32;
  const I32 bits = reinterpret_cast<I32>(v);
  const I32 nan = (0x7F800000 - (bits & 0x7FFFFFFF)) >> 31;  // -1 in a NaN lane, else 0
  return reinterpret_cast<VecF<L>>((nan & 0x7FC00000) | (~nan & bits));
}

// The canonical pairwise order of the sum (reduce.h): the sum of
// contributions [0, n) is the sum of its largest power-of-two prefix plus
// the sum of the rest, each part summed the same way. A binary counter over
// the contributions in rank order builds it: `held` blocks of falling
// power-of-two sizes, two equal neighbours merging left + right as the next
// arrives, the rest folded right to left at the end.
template <int L, class Load>
inline VecF<L> tree_sum(size_t n, Load load) {
  VecF<L> partial[64];
  size_t size[64];
  size_t held = 0;
  for (size_t k = 0; k < n; ++k) {
    VecF<L> carry = load(k);
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
  VecF<L> acc = partial[held - 1];
  for (size_t h = held - 1; h-- > 0;) acc = partial[h] + acc;
  return acc;
}

// One vector of Isa's width from / to each storage dtype.
template <class Isa>
using IsaVec = VecF<Isa::kLanes>;
template <class Isa>
inline IsaVec<Isa> load_vec(const float* p) {
  return load_fp32<Isa::kLanes>(p);
}
template <class Isa>
inline IsaVec<Isa> load_vec(const Bf16Bits* p) {
  return load_bf16<Isa::kLanes>(p);
}
template <class Isa>
inline IsaVec<Isa> load_vec(const Fp16Bits* p) {
  return Isa::load_fp16(&p->bits);
}
template <class Isa>
inline void store_vec(float* p, IsaVec<Isa> v) {
  store_fp32<Isa::kLanes>(p, v);
}
template <class Isa>
inline void store_vec(Bf16Bits* p, IsaVec<Isa> v) {
  store_bf16<Isa::kLanes>(p, v);
}
template <class Isa>
inline void store_vec(Fp16Bits* p, IsaVec<Isa> v) {
  Isa::store_fp16(&p->bits, v);
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

// The reduction of elements [i, i + len), len <= Isa::kLanes, through
// padded buffers: the same lanes, so the same bits as the full-vector loop.
template <class Isa, typename T>
void sum_partial(const T* const* in, size_t n, T* const* out, size_t m, size_t i, size_t len, bool average) {
  constexpr int kL = Isa::kLanes;
  T lanes[kL] = {};
  IsaVec<Isa> acc = tree_sum<kL>(n, [&](size_t k) {
    std::memcpy(static_cast<void*>(lanes), in[k] + i, len * sizeof(T));
    return load_vec<Isa>(lanes);
  });
  if (average) acc = acc / (IsaVec<Isa>{} + static_cast<float>(n));
  store_vec<Isa>(lanes, canonical_nan<kL>(acc));
  for (size_t o = 0; o < m; ++o) std::memcpy(static_cast<void*>(out[o] + i), lanes, len * sizeof(T));
}

// out[o][i] = the pairwise sum of in[k][i] (or the average) for every output o: every
// input read once, the result written to every output, nothing staged. Each
// step loads every contribution before it stores to any output, so an output
// may be exactly one of the inputs.
template <class Isa, typename T>
void sum_fused(const T* const* in, size_t n, T* const* out, size_t m, size_t count, bool average) {
  constexpr int kL = Isa::kLanes;
  using V = IsaVec<Isa>;
  const V vdivisor = V{} + static_cast<float>(n);
  // The loops, compiled twice: for two contributions (N = 2, the common
  // case) without the counter, in[0] + in[1] being its order.
  const auto run = [&](auto two) {
    const auto sum_at = [&](size_t i) {
      V acc;
      if constexpr (decltype(two)::value) {
        acc = load_vec<Isa>(in[0] + i) + load_vec<Isa>(in[1] + i);
      } else {
        acc = tree_sum<kL>(n, [&](size_t k) { return load_vec<Isa>(in[k] + i); });
      }
      if (average) acc = acc / vdivisor;
      return canonical_nan<kL>(acc);
    };
    size_t i = 0;
    // fp32 outputs of 4 MiB and more are written with streaming stores, once
    // a partial head has brought every output to a 64-byte line.
    if constexpr (std::is_same_v<T, float> && Isa::kStream) {
      if (count * sizeof(float) * m >= kStreamBytes && same_line_offset(out, m)) {
        const size_t align = (64 - reinterpret_cast<uintptr_t>(out[0]) % 64) % 64 / sizeof(float);
        const size_t head = align < count ? align : count;
        for (; i + kL <= head; i += kL) sum_partial<Isa>(in, n, out, m, i, kL, average);
        if (i < head) sum_partial<Isa>(in, n, out, m, i, head - i, average);
        for (i = head; i + kL <= count; i += kL) {
          const V acc = sum_at(i);
          for (size_t o = 0; o < m; ++o) Isa::stream_fp32(out[o] + i, acc);
        }
        Isa::fence();
      }
    }
    for (; i + kL <= count; i += kL) {
      const V acc = sum_at(i);
      for (size_t o = 0; o < m; ++o) store_vec<Isa>(out[o] + i, acc);
    }
    if (i < count) sum_partial<Isa>(in, n, out, m, i, count - i, average);
  };
  if (n == 2) {
    run(std::true_type{});
  } else {
    run(std::false_type{});
  }
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
