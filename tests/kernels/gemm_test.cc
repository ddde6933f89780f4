// SPDX-License-Identifier: Apache-2.0
// gemm(): correctness against a naive product for every transpose case, and
// the thread-safety claim: rank threads calling it at once get the same bits
// as serial calls; the advice on OpenBLAS's kernel; and GemmBufferHold's
// claim about OpenBLAS's buffer pool.
#include "kernels/gemm.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "core/process_memory.h"
#include "gradcheck.h"

namespace zerodp::kernels {
namespace {

using testing::random_vector;

// Naive row-major reference in double.
std::vector<float> naive(Trans ta, Trans tb, int m, int n, int k, const std::vector<float>& a,
                         const std::vector<float>& b, float beta, const std::vector<float>& c0) {
  std::vector<float> c(c0);
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        const double av = ta == Trans::kNo ? a[size_t(i) * k + p] : a[size_t(p) * m + i];
        const double bv = tb == Trans::kNo ? b[size_t(p) * n + j] : b[size_t(j) * k + p];
        s += av * bv;
      }
      c[size_t(i) * n + j] = static_cast<float>(s + beta * c0[size_t(i) * n + j]);
    }
  }
  return c;
}

TEST(Gemm, MatchesNaiveForAllTransposes) {
  const int m = 37, n = 29, k = 53;
  for (Trans ta : {Trans::kNo, Trans::kYes}) {
    for (Trans tb : {Trans::kNo, Trans::kYes}) {
      auto a = random_vector(size_t(m) * k, 1);
      auto b = random_vector(size_t(k) * n, 2);
      auto c = random_vector(size_t(m) * n, 3);
      auto want = naive(ta, tb, m, n, k, a, b, 0.5f, c);
      gemm(ta, tb, m, n, k, 1.0f, a.data(), ta == Trans::kNo ? k : m, b.data(), tb == Trans::kNo ? n : k, 0.5f,
           c.data(), n);
      for (size_t i = 0; i < c.size(); ++i) ASSERT_NEAR(c[i], want[i], 1e-4) << i;
    }
  }
}

TEST(Gemm, OpenBlasRunsSingleThreaded) {
  const BlasInfo info = blas_info();
  EXPECT_EQ(info.threads, 1);
  EXPECT_FALSE(info.config.empty());
}

// Six threads, each with its own matrices (small ones that may take
// OpenBLAS's small-matrix path and large ones that take the packed path with
// its shared buffer pool), all four transpose cases, calling gemm() many times
// at once; every result must equal the serial result bit for bit.
TEST(Gemm, ConcurrentCallsGiveSerialBits) {
  constexpr int kThreads = 6;
  constexpr int kCalls = 8;
  struct Job {
    Trans ta, tb;
    int m, n, k;
    std::vector<float> a, b, serial, concurrent;
    void run(std::vector<float>& c) const {
      gemm(ta, tb, m, n, k, 1.0f, a.data(), ta == Trans::kNo ? k : m, b.data(), tb == Trans::kNo ? n : k, 0.0f,
           c.data(), n);
    }
  };
  std::vector<Job> jobs;
  const int sizes[kThreads][3] = {{17, 9, 33},      {65, 97, 129}, {300, 200, 500},
                                  {256, 1152, 384}, {511, 3, 700}, {128, 640, 257}};
  for (int t = 0; t < kThreads; ++t) {
    Job j{t % 2 ? Trans::kYes : Trans::kNo,
          t / 2 % 2 ? Trans::kYes : Trans::kNo,
          sizes[t][0],
          sizes[t][1],
          sizes[t][2],
          {},
          {},
          {},
          {}};
    j.a = random_vector(size_t(j.m) * j.k, 10 + t);
    j.b = random_vector(size_t(j.k) * j.n, 20 + t);
    j.serial.assign(size_t(j.m) * j.n, 0.0f);
    j.run(j.serial);
    jobs.push_back(std::move(j));
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Job& j = jobs[t];
      for (int call = 0; call < kCalls; ++call) {
        j.concurrent.assign(j.serial.size(), -1.0f);
        j.run(j.concurrent);
        if (std::memcmp(j.concurrent.data(), j.serial.data(), j.serial.size() * sizeof(float)) != 0) {
          ++mismatches[t];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
}

// The advice on OPENBLAS_CORETYPE: a kernel narrower than the CPU (OpenBLAS
// 0.3.21 runs Prescott on some AVX-512 Xeons) gets the widest the CPU runs;
// a kernel that fits, or one the list does not know, gets none.
TEST(BetterBlasCoretype, AdvisesTheWidestKernelTheCpuRuns) {
  EXPECT_EQ(better_blas_coretype("Haswell", SimdLevel::kAvx512), "SkylakeX");
  EXPECT_EQ(better_blas_coretype("Zen", SimdLevel::kAvx512), "SkylakeX");
  EXPECT_EQ(better_blas_coretype("Prescott", SimdLevel::kAvx512), "SkylakeX");
  EXPECT_EQ(better_blas_coretype("SANDYBRIDGE", SimdLevel::kAvx512), "SkylakeX");  // any case
  EXPECT_EQ(better_blas_coretype("Haswell", SimdLevel::kAvx512Bf16), "SkylakeX");
  EXPECT_EQ(better_blas_coretype("Prescott", SimdLevel::kAvx2), "Haswell");
  EXPECT_EQ(better_blas_coretype("Sandybridge", SimdLevel::kAvx2), "Haswell");
  for (const char* fits : {"SkylakeX", "Cooperlake", "SapphireRapids"})
    EXPECT_EQ(better_blas_coretype(fits, SimdLevel::kAvx512), "") << fits;
  for (const char* fits : {"Haswell", "Zen", "Excavator", "SkylakeX"})
    EXPECT_EQ(better_blas_coretype(fits, SimdLevel::kAvx2), "") << fits;
  for (SimdLevel cpu : {SimdLevel::kScalar, SimdLevel::kNeon}) EXPECT_EQ(better_blas_coretype("Prescott", cpu), "");
  EXPECT_EQ(better_blas_coretype("NEOVERSEN1", SimdLevel::kNeon), "");
  EXPECT_EQ(better_blas_coretype("Zen5", SimdLevel::kAvx512), "");  // a name this list does not know
  EXPECT_EQ(better_blas_coretype("", SimdLevel::kAvx512), "");
}

// What this process's OpenBLAS picked gets the note exactly when the pure
// rule advises and the user left OPENBLAS_CORETYPE unset.
TEST(BetterBlasCoretype, TheNoteFollowsTheRuleAndTheUsersChoice) {
  const BlasInfo info = blas_info();
  const bool advised = !better_blas_coretype(info.core, best_simd_level()).empty();
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  const bool chosen = env != nullptr && *env != '\0';  // an empty value chooses nothing
  EXPECT_EQ(info.coretype_env, chosen ? env : "");
  EXPECT_EQ(!info.note.empty(), advised && !chosen) << info.core << ": " << info.note;
  if (!info.note.empty()) {
    EXPECT_NE(info.note.find("OPENBLAS_CORETYPE=" + better_blas_coretype(info.core, best_simd_level())),
              std::string::npos);
  }
}

// The warm-up relies on this to fill one slot of OpenBLAS's pool per rank
// thread: under a hold of k, this thread's products pack into slot k, whose
// pages stay resident. Slots 39-41 are far above what the other tests'
// threads ever take at once, so they start untouched. A first product in
// slot 39 pays for what any first product costs (under qemu, translating
// the kernel); the packing's own pages are what slots 40 and 41 then add
// (0.59 MB with x86's SkylakeX kernel, 0.48 MB with arm64's; a small
// product, as qemu runs this test too).
TEST(GemmBufferHold, ProductsPackIntoTheSlotAfterTheHeldOnes) {
  constexpr int m = 128, n = 1024, k = 512;
  const std::vector<float> a = random_vector(size_t(m) * k, 1), b = random_vector(size_t(k) * n, 2);
  std::vector<float> c(size_t(m) * n, 0.0f);
  auto product_in_slot = [&](int slot) {
    const GemmBufferHold hold(slot);
    gemm(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    return static_cast<double>(current_rss_bytes());
  };
  const double start = product_in_slot(39);
  const double fill = product_in_slot(40) - start;
  const double again = product_in_slot(40) - start - fill;
  const double next = product_in_slot(41) - start - fill - again;
  EXPECT_GT(fill, 128.0 * 1024) << "slot 40's pages were not touched by the product";
  EXPECT_LT(again, fill / 8) << "the same slot again took new pages";
  EXPECT_NEAR(next, fill, fill / 4) << "slot 41 did not take the product as slot 40 did";
}

}  // namespace
}  // namespace zerodp::kernels
