#include "core/convert.h"

#include <cpuid.h>

#include <cstring>

#include "core/convert_kernels.h"
#include "core/error.h"

namespace zerodp {
namespace {

// F16C from CPUID leaf 1, ECX bit 29: clang's __builtin_cpu_supports does
// not know "f16c", so the project would not build with clang (libFuzzer).
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 29)) != 0;
}

SimdLevel detect_simd_level() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    return SimdLevel::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && cpu_has_f16c()) return SimdLevel::kAvx2F16c;
  return SimdLevel::kPortable;
}

template <typename Src, typename Dst, typename Fn>
void scalar_loop(const Src* src, Dst* dst, size_t n, Fn fn) {
  for (size_t i = 0; i < n; ++i) dst[i] = fn(src[i]);
}

void check_sizes(size_t src, size_t dst) {
  ZDP_CHECK_EQ(src, dst, ShapeError, "[convert] source and destination sizes differ");
}

}  // namespace

SimdLevel best_simd_level() {
  static const SimdLevel level = detect_simd_level();
  return level;
}

std::vector<SimdLevel> supported_simd_levels() {
  std::vector<SimdLevel> levels{SimdLevel::kPortable};
  const SimdLevel best = best_simd_level();
  if (best >= SimdLevel::kAvx2F16c) levels.push_back(SimdLevel::kAvx2F16c);
  if (best >= SimdLevel::kAvx512) levels.push_back(SimdLevel::kAvx512);
  return levels;
}

const char* simd_level_name(SimdLevel level) {
  switch (level) {
    case SimdLevel::kPortable: return "portable";
    case SimdLevel::kAvx2F16c: return "avx2+f16c";
    case SimdLevel::kAvx512: return "avx512";
  }
  return "?";
}

void convert(std::span<const float> src, std::span<Half> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  switch (level) {
    case SimdLevel::kAvx512: return convert_kernels::float_to_half_avx512(src.data(), dst.data(), src.size());
    case SimdLevel::kAvx2F16c: return convert_kernels::float_to_half_avx2(src.data(), dst.data(), src.size());
    case SimdLevel::kPortable: return scalar_loop(src.data(), dst.data(), src.size(), float_to_half);
  }
}

void convert(std::span<const Half> src, std::span<float> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  switch (level) {
    case SimdLevel::kAvx512: return convert_kernels::half_to_float_avx512(src.data(), dst.data(), src.size());
    case SimdLevel::kAvx2F16c: return convert_kernels::half_to_float_avx2(src.data(), dst.data(), src.size());
    case SimdLevel::kPortable: return scalar_loop(src.data(), dst.data(), src.size(), half_to_float);
  }
}

void convert(std::span<const float> src, std::span<BFloat16> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  switch (level) {
    case SimdLevel::kAvx512: return convert_kernels::float_to_bf16_avx512(src.data(), dst.data(), src.size());
    case SimdLevel::kAvx2F16c: return convert_kernels::float_to_bf16_avx2(src.data(), dst.data(), src.size());
    case SimdLevel::kPortable: return scalar_loop(src.data(), dst.data(), src.size(), float_to_bfloat16);
  }
}

void convert(std::span<const BFloat16> src, std::span<float> dst, SimdLevel level) {
  check_sizes(src.size(), dst.size());
  switch (level) {
    case SimdLevel::kAvx512: return convert_kernels::bf16_to_float_avx512(src.data(), dst.data(), src.size());
    case SimdLevel::kAvx2F16c: return convert_kernels::bf16_to_float_avx2(src.data(), dst.data(), src.size());
    case SimdLevel::kPortable: return scalar_loop(src.data(), dst.data(), src.size(), bfloat16_to_float);
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
