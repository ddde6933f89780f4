// SPDX-License-Identifier: Apache-2.0
// SIMD levels: the one mechanism by which zerodp picks instruction sets.
//
// Every vectorised loop exists once per level, in its own file
// (`*_avx2.cc`, `*_avx512.cc`, ...), compiled with exactly the flags its
// intrinsics need; the dispatching code chooses a file's loops at run time
// from the level below. Portable code never tests __AVX512F__ and friends.
// Every level gives the same bits (IEEE lanes, the same operations in the
// same order, no fused multiply-add unless every level fuses); tests hold
// each level against the scalar one.
//
// Levels by architecture (CMake decides which files a build has):
//   x86-64:  scalar < avx2 (AVX2 + FMA + F16C) < avx512 (F + BW + VL)
//            < avx512bf16 (avx512 + AVX512_BF16's vdpbf16ps: AMD Zen 4 and
//            later, Intel Cooper Lake and Sapphire Rapids and later)
//   aarch64: scalar < neon
// A module has files for some levels only: by_level() runs, for a level, the
// module's code of the highest level at or below it (the bf16 matrix
// product has an avx512bf16 file; the conversions run their avx512 one).
//   other:   scalar
// "scalar" is the portable C++ loops, compiled for the build's baseline
// target (the compiler may still vectorise them with that target's vector
// unit; the bits do not change).
//
// ZERODP_SIMD=scalar|avx2|avx512|avx512bf16|neon forces a level (lower than the best, or
// the best itself); asking for a level the CPU or the build lacks is a
// ConfigError with a one-line message.
// Thread-safety: all functions are thread-safe; the active level is read
// once from the environment, and ScopedSimdLevel (tests) must not overlap
// with other threads' use.
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

namespace zerodp {

enum class SimdLevel { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kNeon = 3, kAvx512Bf16 = 4 };

// The best level this CPU and this build support (detected once).
SimdLevel best_simd_level();
// The level every default argument uses: ZERODP_SIMD's when set, else the
// best. Throws ConfigError when ZERODP_SIMD names an unknown level or one
// this CPU or build cannot run.
SimdLevel active_simd_level();
// Every level this CPU and build can run, scalar first: for tests and
// benchmarks.
std::vector<SimdLevel> supported_simd_levels();
// "scalar", "avx2", "avx512", "avx512bf16", "neon": the names ZERODP_SIMD takes.
const char* simd_level_name(SimdLevel level);
std::optional<SimdLevel> parse_simd_level(std::string_view name);
// The level ZERODP_SIMD=`requested` asks for ("" = the best). Throws
// ConfigError, one line naming the levels that would work, when it names no
// level, a level this build has no files for, or one this CPU cannot run.
SimdLevel resolve_simd_level(std::string_view requested);
// The levels this build has files for on its architecture (whether or not
// the CPU runs them), lowest first.
std::vector<SimdLevel> built_simd_levels();

// A level's height on its architecture's ladder: scalar 0; avx2 1, avx512 2,
// avx512bf16 3; neon 1.
int simd_height(SimdLevel level);
// One entry of a module's dispatch table: its code for one level.
template <typename Code>
struct LevelCode {
  SimdLevel level;
  Code code;
};
// The code of `table` for `level`: the entry of the highest level at or below
// it. A table lists the levels its module has files for (the x86 ones under
// ZERODP_SIMD_X86_64, neon under ZERODP_SIMD_AARCH64) and always kScalar,
// so a level the module has nothing of its own for runs the one below.
template <typename Code>
Code by_level(SimdLevel level, std::initializer_list<LevelCode<Code>> table) {
  const int height = simd_height(level);
  const LevelCode<Code>* pick = nullptr;
  for (const LevelCode<Code>& entry : table) {
    const int h = simd_height(entry.level);
    if (h <= height && (pick == nullptr || h > simd_height(pick->level))) pick = &entry;
  }
  return pick->code;  // kScalar (height 0) is in every table
}
// Tests: makes `level` the active one until destroyed. REQUIRES a supported
// level, and no other thread reading the active level meanwhile.
class ScopedSimdLevel {
 public:
  explicit ScopedSimdLevel(SimdLevel level);
  ~ScopedSimdLevel();
  ScopedSimdLevel(const ScopedSimdLevel&) = delete;
  ScopedSimdLevel& operator=(const ScopedSimdLevel&) = delete;

 private:
  SimdLevel previous_;
};

namespace simd_detail {
// Per architecture (simd_cpu_<arch>.cc, chosen by CMake): the levels the
// build has files for, lowest first, and whether this CPU runs one.
std::vector<SimdLevel> arch_levels();
bool cpu_runs(SimdLevel level);
}  // namespace simd_detail

}  // namespace zerodp
