// SPDX-License-Identifier: Apache-2.0
// AlignedBuffer<T>: an owning, 64-byte aligned, fixed-size array of trivially
// copyable elements, zero-initialised. Move-only. The memory ledger (zero/)
// accounts for buffers by their byte size; this type only owns memory.
// Thread-safety: like std::vector; distinct buffers are independent.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <type_traits>

namespace zerodp {

namespace detail {
// 64-byte aligned, zeroed storage of `bytes` bytes (nullptr for 0 bytes);
// throws std::bad_alloc when the allocation fails.
void* aligned_zeroed_alloc(size_t bytes);
struct AlignedFree {
  void operator()(void* p) const noexcept;
};
}  // namespace detail

inline constexpr size_t kBufferAlignment = 64;

template <typename T>
class AlignedBuffer {
  static_assert(std::is_trivially_copyable_v<T>, "AlignedBuffer holds trivially copyable elements");

 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t count)
      : data_(static_cast<T*>(detail::aligned_zeroed_alloc(count * sizeof(T)))), size_(count) {}

  AlignedBuffer(AlignedBuffer&&) noexcept = default;
  AlignedBuffer& operator=(AlignedBuffer&&) noexcept = default;

  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data_.get()[i]; }
  const T& operator[](size_t i) const { return data_.get()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  std::span<T> span() { return {data(), size_}; }
  std::span<const T> span() const { return {data(), size_}; }
  operator std::span<T>() { return span(); }              // NOLINT: a view, by design
  operator std::span<const T>() const { return span(); }  // NOLINT

 private:
  std::unique_ptr<T, detail::AlignedFree> data_;
  size_t size_ = 0;
};

}  // namespace zerodp
