// SPDX-License-Identifier: Apache-2.0
// The memory ledger of one rank: every allocation of model states, buffers
// and activations is booked under a category, and the ledger keeps current
// and peak bytes per category and in total. The engine's summary and the
// metrics JSON print it next to the ZeRO paper's formulas (and the planner's
// prediction), so a mismatch shows.
//
// LedgerBuffer<T> is the preferred way to allocate: an owning, 64-byte
// aligned, zeroed buffer (core/aligned_buffer.h) that books its bytes on
// construction and releases them on destruction or reset(), so model state
// cannot be allocated without being counted. allocate()/release() are there
// for memory the ledger does not own (e.g. a backend's internal buffers);
// optimizer_state_accountant() books an optimizer's m/v/momentum buffers.
//
// Bytes are the requested element bytes (count * sizeof(T)), not the
// allocator's rounding to 64 bytes: this is what the paper's formulas count.
// Thread-safety: MemoryLedger is safe to call from several threads at once (a
// rank's compute thread and its comm thread); each call is atomic under one
// mutex, and snapshot() is a consistent cut. A LedgerBuffer is like a
// std::vector (one owner). The ledger must outlive its buffers and the
// optimizers booked into it.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string_view>
#include <utility>

#include "core/aligned_buffer.h"
#include "optim/optimizer.h"

namespace zerodp::zero {

enum class MemoryCategory : uint8_t {
  kParams = 0,       // low-precision (or fp32) parameters this rank keeps resident
  kGrads = 1,        // gradients this rank keeps
  kMaster = 2,       // fp32 master parameters (mixed precision)
  kAdamM = 3,        // Adam first moment (also SGD's momentum buffer and Lion's m)
  kAdamV = 4,        // Adam second moment
  kGathered = 5,     // stage 3: all-gathered parameters of the current/prefetched unit
  kBuckets = 6,      // gradient buckets for reduction
  kActivations = 7,  // forward activations kept for backward
  kComm = 8,         // communication scratch: compressed collectives' staging, Adafactor's statistics reduction
  kScratch = 9,      // the engine's temporaries outside the step: initialisation and load chunks,
                     // checkpoint records, a consolidated copy for the sample
  kOffload = 10,     // --offload-optimizer: the staging buffers the disk's states stream through
};
inline constexpr size_t kNumMemoryCategories = 11;

// "params", "grads", "master", "adam_m", "adam_v", "gathered", "buckets",
// "activations", "comm", "scratch", "offload".
std::string_view memory_category_name(MemoryCategory category);
// The categories the ZeRO paper calls model states (params, grads, master,
// adam_m, adam_v).
bool is_model_state(MemoryCategory category);

struct ByteCounts {
  uint64_t current = 0;
  uint64_t peak = 0;
  friend bool operator==(const ByteCounts&, const ByteCounts&) = default;
};

// A consistent cut of the ledger.
struct LedgerSnapshot {
  std::array<ByteCounts, kNumMemoryCategories> categories{};
  ByteCounts total = {};         // peak of the sum, not the sum of peaks
  ByteCounts model_states = {};  // params + grads + master + adam_m + adam_v, peak of that sum
  const ByteCounts& operator[](MemoryCategory c) const { return categories[static_cast<size_t>(c)]; }
};

// {"params": {"current": .., "peak": ..}, ..., "model_states": {..}, "total": {..}},
// byte counts as integers.
nlohmann::json to_json(const LedgerSnapshot& snapshot);

class MemoryLedger {
 public:
  MemoryLedger() = default;
  MemoryLedger(const MemoryLedger&) = delete;
  MemoryLedger& operator=(const MemoryLedger&) = delete;

  void allocate(MemoryCategory category, uint64_t bytes);
  // Throws Error when more is released than the category holds (a booking
  // bug), leaving the ledger unchanged.
  void release(MemoryCategory category, uint64_t bytes);

  uint64_t current(MemoryCategory category) const;
  uint64_t peak(MemoryCategory category) const;
  uint64_t current_total() const;
  uint64_t peak_total() const;
  LedgerSnapshot snapshot() const;

  // Peaks := current values, e.g. after setup to measure one step's peak.
  void reset_peaks();

 private:
  void add_locked(MemoryCategory category, int64_t delta);

  mutable std::mutex mutex_;
  LedgerSnapshot counts_;
};

// Books an optimizer's state buffers: exp_avg (Adam's m, Lion's m) and
// momentum_buffer under adam_m, exp_avg_sq under adam_v. Pass it in optim::ShardOptions.
optim::StateAccountant optimizer_state_accountant(MemoryLedger& ledger);

// An owning, aligned, zeroed buffer of `count` T, booked under `category` in
// `ledger` for its lifetime. Move-only; a moved-from or default buffer is
// empty and books nothing.
template <typename T>
class LedgerBuffer {
 public:
  LedgerBuffer() = default;
  LedgerBuffer(MemoryLedger& ledger, MemoryCategory category, size_t count)
      : buffer_(count), ledger_(&ledger), category_(category) {
    ledger_->allocate(category_, buffer_.bytes());
  }
  ~LedgerBuffer() { reset(); }

  LedgerBuffer(LedgerBuffer&& other) noexcept
      : buffer_(std::move(other.buffer_)), ledger_(std::exchange(other.ledger_, nullptr)), category_(other.category_) {}
  LedgerBuffer& operator=(LedgerBuffer&& other) noexcept {
    if (this != &other) {
      reset();
      buffer_ = std::move(other.buffer_);
      ledger_ = std::exchange(other.ledger_, nullptr);
      category_ = other.category_;
    }
    return *this;
  }

  // Frees the memory and releases its booking; the buffer becomes empty.
  void reset() noexcept {
    if (ledger_ != nullptr) {
      try {
        ledger_->release(category_, buffer_.bytes());
      } catch (...) {  // cannot happen: this buffer booked exactly these bytes
      }
      ledger_ = nullptr;
    }
    buffer_ = AlignedBuffer<T>();
  }

  T* data() { return buffer_.data(); }
  const T* data() const { return buffer_.data(); }
  size_t size() const { return buffer_.size(); }
  size_t bytes() const { return buffer_.bytes(); }
  bool empty() const { return buffer_.empty(); }
  MemoryCategory category() const { return category_; }
  T& operator[](size_t i) { return buffer_[i]; }
  const T& operator[](size_t i) const { return buffer_[i]; }
  T* begin() { return buffer_.begin(); }
  T* end() { return buffer_.end(); }
  const T* begin() const { return buffer_.begin(); }
  const T* end() const { return buffer_.end(); }
  std::span<T> span() { return buffer_.span(); }
  std::span<const T> span() const { return buffer_.span(); }
  operator std::span<T>() { return span(); }              // NOLINT: a view, by design
  operator std::span<const T>() const { return span(); }  // NOLINT

 private:
  AlignedBuffer<T> buffer_;
  MemoryLedger* ledger_ = nullptr;
  MemoryCategory category_ = MemoryCategory::kParams;
};

}  // namespace zerodp::zero
