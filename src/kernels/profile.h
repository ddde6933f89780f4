// SPDX-License-Identifier: Apache-2.0
// Per-kernel time accounting for `zerodp bench model`: a Profile accumulates
// seconds and FLOPs per kernel kind; ScopedKernelTimer adds one call's time
// when it goes out of scope, and costs nothing when the profile is null.
// Thread-safety: a Profile belongs to one rank's workspace; not shared.
#pragma once

#include <array>
#include <chrono>
#include <string_view>

namespace zerodp::kernels {

enum class KernelKind { kMatmul, kAttention, kLayerNorm, kGelu, kSoftmaxXent, kEmbedding, kResidual, kCount };
std::string_view kernel_name(KernelKind kind);

class Profile {
 public:
  struct Entry {
    double seconds = 0;
    double flops = 0;
    long calls = 0;
  };
  void add(KernelKind kind, double seconds, double flops) {
    auto& e = entries_[static_cast<size_t>(kind)];
    e.seconds += seconds;
    e.flops += flops;
    ++e.calls;
  }
  const Entry& entry(KernelKind kind) const { return entries_[static_cast<size_t>(kind)]; }
  double total_seconds() const;
  void reset() { entries_ = {}; }

 private:
  std::array<Entry, static_cast<size_t>(KernelKind::kCount)> entries_{};
};

class ScopedKernelTimer {
 public:
  ScopedKernelTimer(Profile* profile, KernelKind kind, double flops = 0)
      : profile_(profile), kind_(kind), flops_(flops) {
    if (profile_) start_ = std::chrono::steady_clock::now();
  }
  ~ScopedKernelTimer() {
    if (profile_) {
      const std::chrono::duration<double> d = std::chrono::steady_clock::now() - start_;
      profile_->add(kind_, d.count(), flops_);
    }
  }
  ScopedKernelTimer(const ScopedKernelTimer&) = delete;
  ScopedKernelTimer& operator=(const ScopedKernelTimer&) = delete;

 private:
  Profile* profile_;
  KernelKind kind_;
  double flops_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace zerodp::kernels
