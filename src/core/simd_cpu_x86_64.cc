// SPDX-License-Identifier: Apache-2.0
// x86-64: the levels this build has files for, and the CPU checks behind
// them (CPUID through GCC's builtins, plus F16C from CPUID directly).
#include <cpuid.h>

#include "core/simd.h"

namespace zerodp::simd_detail {
namespace {

// F16C from CPUID leaf 1, ECX bit 29: clang's __builtin_cpu_supports does
// not know "f16c", so the project would not build with clang (libFuzzer).
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 29)) != 0;
}

bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c();
}

bool cpu_has_avx512() {
  __builtin_cpu_init();
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}

// AVX512_BF16 from CPUID leaf 7, sub-leaf 1, EAX bit 5 (GCC 12's and clang
// 14's __builtin_cpu_supports do not agree on its name).
bool cpu_has_avx512_bf16() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return cpu_has_avx512() && (eax & (1u << 5)) != 0;
}

}  // namespace

std::vector<SimdLevel> arch_levels() {
  return {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512, SimdLevel::kAvx512Bf16};
}

bool cpu_runs(SimdLevel level) {
  switch (level) {
    case SimdLevel::kScalar:
      return true;
    case SimdLevel::kAvx2:
      return cpu_has_avx2();
    case SimdLevel::kAvx512:
      return cpu_has_avx512();
    case SimdLevel::kAvx512Bf16:
      return cpu_has_avx512_bf16();
    case SimdLevel::kNeon:
      return false;
  }
  return false;
}

}  // namespace zerodp::simd_detail
