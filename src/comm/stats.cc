// SPDX-License-Identifier: Apache-2.0
#include "comm/stats.h"

namespace zerodp::comm {

uint64_t CommStats::total_calls() const {
  uint64_t total = 0;
  for (const auto& s : by_kind) total += s.calls;
  return total;
}

uint64_t CommStats::total_bytes_sent() const {
  uint64_t total = 0;
  for (const auto& s : by_kind) total += s.bytes_sent;
  return total;
}

uint64_t CommStats::total_bytes_received() const {
  uint64_t total = 0;
  for (const auto& s : by_kind) total += s.bytes_received;
  return total;
}

double CommStats::total_seconds() const {
  double total = 0;
  for (const auto& s : by_kind) total += s.seconds;
  return total;
}

CommStats operator-(const CommStats& later, const CommStats& earlier) {
  CommStats d;
  for (size_t i = 0; i < d.by_kind.size(); ++i) {
    d.by_kind[i].calls = later.by_kind[i].calls - earlier.by_kind[i].calls;
    d.by_kind[i].bytes_sent = later.by_kind[i].bytes_sent - earlier.by_kind[i].bytes_sent;
    d.by_kind[i].bytes_received = later.by_kind[i].bytes_received - earlier.by_kind[i].bytes_received;
    d.by_kind[i].seconds = later.by_kind[i].seconds - earlier.by_kind[i].seconds;
  }
  return d;
}

}  // namespace zerodp::comm
