// SPDX-License-Identifier: Apache-2.0
#include "core/convert.h"

#include <cstring>

#include "core/convert_kernels.h"
#include "core/error.h"

namespace zerodp {
namespace {

// The scalar level's loop for one element conversion.
template <typename Src, typename Dst, Dst (*kOne)(Src)>
void scalar_loop(const Src* src, Dst* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = kOne(src[i]);
}

template <typename Src, typename Dst>
using LevelLoop = void (*)(const Src*, Dst*, size_t);

void check_sizes(size_t src, size_t dst) {
  ZDP_CHECK_EQ(src, dst, ShapeError, "[convert] source and destination sizes differ");
}

}  // namespace

void convert(std::span<const float> src, std::span<Half> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  const auto loop = by_level<LevelLoop<float, Half>>(level, {
    {SimdLevel::kScalar, scalar_loop<float, Half, float_to_half>},
#if ZERODP_SIMD_X86_64
        {SimdLevel::kAvx2, convert_kernels::float_to_half_avx2},
        {SimdLevel::kAvx512, convert_kernels::float_to_half_avx512},
#endif
#if ZERODP_SIMD_AARCH64
        {SimdLevel::kNeon, convert_kernels::float_to_half_neon},
#endif
  });
  loop(src.data(), dst.data(), src.size());
}

void convert(std::span<const Half> src, std::span<float> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  const auto loop = by_level<LevelLoop<Half, float>>(level, {
    {SimdLevel::kScalar, scalar_loop<Half, float, half_to_float>},
#if ZERODP_SIMD_X86_64
        {SimdLevel::kAvx2, convert_kernels::half_to_float_avx2},
        {SimdLevel::kAvx512, convert_kernels::half_to_float_avx512},
#endif
#if ZERODP_SIMD_AARCH64
        {SimdLevel::kNeon, convert_kernels::half_to_float_neon},
#endif
  });
  loop(src.data(), dst.data(), src.size());
}

void convert(std::span<const float> src, std::span<BFloat16> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  const auto loop = by_level<LevelLoop<float, BFloat16>>(level, {
    {SimdLevel::kScalar, scalar_loop<float, BFloat16, float_to_bfloat16>},
#if ZERODP_SIMD_X86_64
        {SimdLevel::kAvx2, convert_kernels::float_to_bf16_avx2},
        {SimdLevel::kAvx512, convert_kernels::float_to_bf16_avx512},
#endif
  });
  loop(src.data(), dst.data(), src.size());
}

void convert(std::span<const BFloat16> src, std::span<float> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  const auto loop = by_level<LevelLoop<BFloat16, float>>(level, {
    {SimdLevel::kScalar, scalar_loop<BFloat16, float, bfloat16_to_float>},
#if ZERODP_SIMD_X86_64
        {SimdLevel::kAvx2, convert_kernels::bf16_to_float_avx2},
        {SimdLevel::kAvx512, convert_kernels::bf16_to_float_avx512},
#endif
  });
  loop(src.data(), dst.data(), src.size());
}

void convert(const void* src, Dtype src_type, void* dst, Dtype dst_type, size_t count) {
  using K = Dtype::Kind;
  if (src_type == dst_type) {
    if (count != 0) std::memmove(dst, src, count * src_type.size());
    return;
  }
  const auto* f32_src = static_cast<const float*>(src);
  auto* f32_dst = static_cast<float*>(dst);
  if (src_type.kind() == K::kFp32) {
    if (dst_type.kind() == K::kFp16) return convert({f32_src, count}, {static_cast<Half*>(dst), count});
    return convert({f32_src, count}, {static_cast<BFloat16*>(dst), count});
  }
  if (dst_type.kind() == K::kFp32) {
    if (src_type.kind() == K::kFp16) return convert({static_cast<const Half*>(src), count}, {f32_dst, count});
    return convert({static_cast<const BFloat16*>(src), count}, {f32_dst, count});
  }
  // fp16 <-> bf16: widen to fp32 in blocks, then narrow once.
  constexpr size_t kBlock = 4096;
  float buffer[kBlock];
  for (size_t done = 0; done < count; done += kBlock) {
    const size_t n = std::min(kBlock, count - done);
    const auto* in = static_cast<const uint16_t*>(src) + done;
    auto* out = static_cast<uint16_t*>(dst) + done;
    convert(in, src_type, buffer, Dtype::fp32(), n);
    convert(buffer, Dtype::fp32(), out, dst_type, n);
  }
}

}  // namespace zerodp
