// SPDX-License-Identifier: Apache-2.0
#include "core/convert.h"

#include <cstring>

#include "core/convert_kernels.h"
#include "core/error.h"

namespace zerodp {
namespace {

template <typename Src, typename Dst, typename Fn>
void scalar_loop(const Src* src, Dst* dst, size_t n, Fn fn) {
  for (size_t i = 0; i < n; ++i) dst[i] = fn(src[i]);
}

void check_sizes(size_t src, size_t dst) {
  ZDP_CHECK_EQ(src, dst, ShapeError, "[convert] source and destination sizes differ");
}

}  // namespace

void convert(std::span<const float> src, std::span<Half> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  switch (level) {
#if ZERODP_SIMD_X86_64
    case SimdLevel::kAvx512:
      return convert_kernels::float_to_half_avx512(src.data(), dst.data(), src.size());
    case SimdLevel::kAvx2:
      return convert_kernels::float_to_half_avx2(src.data(), dst.data(), src.size());
#endif
#if ZERODP_SIMD_AARCH64
    case SimdLevel::kNeon:
      return convert_kernels::float_to_half_neon(src.data(), dst.data(), src.size());
#endif
    default:
      return scalar_loop(src.data(), dst.data(), src.size(), float_to_half);
  }
}

void convert(std::span<const Half> src, std::span<float> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  switch (level) {
#if ZERODP_SIMD_X86_64
    case SimdLevel::kAvx512:
      return convert_kernels::half_to_float_avx512(src.data(), dst.data(), src.size());
    case SimdLevel::kAvx2:
      return convert_kernels::half_to_float_avx2(src.data(), dst.data(), src.size());
#endif
#if ZERODP_SIMD_AARCH64
    case SimdLevel::kNeon:
      return convert_kernels::half_to_float_neon(src.data(), dst.data(), src.size());
#endif
    default:
      return scalar_loop(src.data(), dst.data(), src.size(), half_to_float);
  }
}

void convert(std::span<const float> src, std::span<BFloat16> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  switch (level) {
#if ZERODP_SIMD_X86_64
    case SimdLevel::kAvx512:
      return convert_kernels::float_to_bf16_avx512(src.data(), dst.data(), src.size());
    case SimdLevel::kAvx2:
      return convert_kernels::float_to_bf16_avx2(src.data(), dst.data(), src.size());
#endif
    default:
      return scalar_loop(src.data(), dst.data(), src.size(), float_to_bfloat16);
  }
}

void convert(std::span<const BFloat16> src, std::span<float> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  switch (level) {
#if ZERODP_SIMD_X86_64
    case SimdLevel::kAvx512:
      return convert_kernels::bf16_to_float_avx512(src.data(), dst.data(), src.size());
    case SimdLevel::kAvx2:
      return convert_kernels::bf16_to_float_avx2(src.data(), dst.data(), src.size());
#endif
    default:
      return scalar_loop(src.data(), dst.data(), src.size(), bfloat16_to_float);
  }
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
