// SPDX-License-Identifier: Apache-2.0
// Per-kernel time accounting for `zerodp bench model`: a Profile accumulates
// seconds and FLOPs per kernel kind on its clock (core/clock.h: the thread's
// CPU time by default, so a profile taken on a shared machine is not
// inflated by the time other processes held the core); ScopedKernelTimer
// adds one call's time when it goes out of scope, and costs nothing when the
// profile is null.
// Thread-safety: a Profile belongs to one rank's workspace; not shared, and
// read on the thread that runs the kernels.
#pragma once

#include <array>
#include <string_view>

#include "core/clock.h"

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
  ClockKind clock() const { return clock_; }
  void set_clock(ClockKind clock) { clock_ = clock; }

 private:
  std::array<Entry, static_cast<size_t>(KernelKind::kCount)> entries_{};
  ClockKind clock_ = ClockKind::kThreadCpu;
};

class ScopedKernelTimer {
 public:
  ScopedKernelTimer(Profile* profile, KernelKind kind, double flops = 0)
      : profile_(profile), kind_(kind), flops_(flops) {
    if (profile_) start_ = clock_seconds(profile_->clock());
  }
  ~ScopedKernelTimer() {
    if (profile_) profile_->add(kind_, clock_seconds(profile_->clock()) - start_, flops_);
  }
  ScopedKernelTimer(const ScopedKernelTimer&) = delete;
  ScopedKernelTimer& operator=(const ScopedKernelTimer&) = delete;

 private:
  Profile* profile_;
  KernelKind kind_;
  double flops_;
  double start_ = 0;
};

}  // namespace zerodp::kernels
