// SPDX-License-Identifier: Apache-2.0
#include "kernels/gemm.h"

#include <cblas.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <mutex>

#include "core/simd.h"

// OpenBLAS's buffer pool, exported by every OpenBLAS (GotoBLAS's driver
// layer, used by its LAPACK) though no public header declares it.
extern "C" void* blas_memory_alloc(int procpos);
extern "C" void blas_memory_free(void* area);

namespace zerodp::kernels {
namespace {

// One thread per caller: rank threads each run their own sgemm. With more
// than one OpenBLAS thread the library's shared thread pool would be entered
// from several rank threads at once, which serialises them (and older builds
// raced); with one thread sgemm never touches the pool.
void ensure_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

CBLAS_TRANSPOSE to_cblas(Trans t) { return t == Trans::kYes ? CblasTrans : CblasNoTrans; }

}  // namespace

void gemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b,
          int ldb, float beta, float* c, int ldc) {
  ensure_single_threaded();
  if (m == 0 || n == 0) return;
  cblas_sgemm(CblasRowMajor, to_cblas(trans_a), to_cblas(trans_b), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

GemmBufferHold::GemmBufferHold(int slots) {
  ensure_single_threaded();
  held_.reserve(static_cast<size_t>(slots));
  for (int i = 0; i < slots; ++i) held_.push_back(blas_memory_alloc(0));
}

GemmBufferHold::~GemmBufferHold() {
  for (void* area : held_) blas_memory_free(area);
}

namespace {

// BlasInfo::note, from the fields blas_info() read.
std::string coretype_note(const BlasInfo& info) {
  if (!info.coretype_env.empty()) return "";  // the user chose
  const std::string better = better_blas_coretype(info.core, best_simd_level());
  if (better.empty()) return "";
  if (info.core == "Prescott") {
    return fmt::format(
        "OpenBLAS does not know this CPU and runs its generic kernel; OPENBLAS_CORETYPE={} is several "
        "times faster here",
        better);
  }
  return fmt::format(
      "OpenBLAS does not know this CPU and runs its {} kernel, without {}; OPENBLAS_CORETYPE={} is faster (zerodp "
      "bench model measures it here)",
      info.core, better == "SkylakeX" ? "AVX-512" : "AVX2", better);
}

}  // namespace

BlasInfo blas_info() {
  ensure_single_threaded();
  BlasInfo info;
  // Read once: OpenBLAS 0.3.21's openblas_get_config() appends
  // " MAX_THREADS=N" to its static string on every call, so a second call
  // names it twice.
  static const std::string config = openblas_get_config();
  info.config = config;
  info.core = openblas_get_corename();
  info.parallel = openblas_get_parallel();
  info.threads = openblas_get_num_threads();
  if (const char* env = std::getenv("OPENBLAS_CORETYPE"); env != nullptr) info.coretype_env = env;
  info.note = coretype_note(info);
  return info;
}

std::string better_blas_coretype(std::string_view core, SimdLevel best) {
  // OpenBLAS's x86-64 kernel names (openblas_get_corename()), by the widest
  // vectors their sgemm uses.
  static constexpr std::array<std::string_view, 3> kAvx512{"SkylakeX", "Cooperlake", "SapphireRapids"};
  static constexpr std::array<std::string_view, 3> kAvx2{"Haswell", "Zen", "Excavator"};
  static constexpr std::array<std::string_view, 14> kOlder{
      "Prescott", "Core2",        "Penryn",    "Dunnington", "Nehalem",   "Atom",       "Sandybridge",
      "Opteron",  "Opteron_SSE3", "Barcelona", "Bobcat",     "Bulldozer", "Piledriver", "Steamroller"};
  const auto is = [core](const auto& names) {
    return std::any_of(names.begin(), names.end(), [core](std::string_view name) {
      return core.size() == name.size() && std::equal(core.begin(), core.end(), name.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
             });
    });
  };
  if (is(kAvx512)) return "";  // the widest OpenBLAS has
  const bool avx512 = best == SimdLevel::kAvx512 || best == SimdLevel::kAvx512Bf16;
  if (avx512 && (is(kAvx2) || is(kOlder))) return "SkylakeX";
  if (best == SimdLevel::kAvx2 && is(kOlder)) return "Haswell";
  return "";
}

}  // namespace zerodp::kernels
