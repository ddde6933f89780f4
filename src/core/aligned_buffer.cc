// SPDX-License-Identifier: Apache-2.0
#include "core/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace zerodp::detail {

void* aligned_zeroed_alloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t rounded = (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
  void* p = std::aligned_alloc(kBufferAlignment, rounded);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);
  return p;
}

void AlignedFree::operator()(void* p) const noexcept { std::free(p); }

}  // namespace zerodp::detail
