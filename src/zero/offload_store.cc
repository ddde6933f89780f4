// SPDX-License-Identifier: Apache-2.0
#include "zero/offload_store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace zerodp::zero {
namespace {

// An extent moves in at most this many requests, so that a read ahead and a
// write behind are each spread over the device's queue without the caller
// ever blocking on a full queue: at most three extents are in flight.
constexpr size_t kPiecesPerExtent = 8;
constexpr int kQueueDepth = 3 * kPiecesPerExtent;

}  // namespace

OffloadStore::OffloadStore(const std::string& dir, int rank, std::vector<size_t> unit_bytes, MemoryLedger& ledger)
    : unit_bytes_(std::move(unit_bytes)),
      slot_bytes_(static_cast<size_t>(offload_slot_bytes(unit_bytes_))),
      chunk_(static_cast<size_t>(round_to_direct_block(std::max(kMinOffloadPiece, slot_bytes_ / kPiecesPerExtent)))),
      file_(dir, fmt::format("zerodp-offload-{}-rank{}.states", ::getpid(), rank), "--offload-optimizer",
            ScratchFile::Name::kUnlinkAtOnce),
      staging_(ledger, MemoryCategory::kOffload, static_cast<size_t>(offload_staging_bytes(unit_bytes_))),
      io_(kQueueDepth) {
  offsets_ = offload_offsets(unit_bytes_);
  file_.reserve(offload_disk_bytes(unit_bytes_));
  slots_ = direct_aligned(staging_.data());
}

OffloadStore::~OffloadStore() = default;

std::span<std::byte> OffloadStore::slot(size_t unit) { return {slots_ + (unit % kSlots) * slot_bytes_, slot_bytes_}; }

OffloadStore::Tickets OffloadStore::transfer(bool write, size_t unit, std::span<std::byte> buffer) {
  Tickets tickets;
  const size_t bytes = static_cast<size_t>(round_to_direct_block(unit_bytes_[unit]));
  for (size_t at = 0; at < bytes; at += chunk_) {
    const size_t n = std::min(chunk_, bytes - at);
    tickets.push_back(write ? io_.write(file_.fd(), buffer.data() + at, n, offsets_[unit] + at, file_.path())
                            : io_.read(file_.fd(), buffer.data() + at, n, offsets_[unit] + at, file_.path()));
  }
  (write ? traffic_.bytes_written : traffic_.bytes_read) += bytes;
  return tickets;
}

void OffloadStore::wait(Tickets& tickets) {
  if (tickets.empty()) return;
  const auto start = std::chrono::steady_clock::now();
  for (const AsyncIo::Ticket t : std::exchange(tickets, {})) io_.wait(t);
  traffic_.wait_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::span<std::byte> OffloadStore::read_one(size_t unit) {
  const std::span<std::byte> window = slot(0);
  Tickets t = transfer(false, unit, window);
  wait(t);
  return window.first(unit_bytes_[unit]);
}

void OffloadStore::write_one(size_t unit) {
  Tickets t = transfer(true, unit, slot(0));
  wait(t);
}

void OffloadStore::stream(Pass pass, const Visit& visit) {
  const size_t units = unit_bytes_.size();
  std::array<Tickets, kSlots> reads, writes;  // per slot
  auto start_read = [&](size_t u) {
    wait(writes[u % kSlots]);  // the slot's last unit is on the disk
    if (pass == Pass::kFill) {
      std::fill_n(slot(u).data(), unit_bytes_[u], std::byte{0});
    } else {
      reads[u % kSlots] = transfer(false, u, slot(u));
    }
  };
  const auto start = std::chrono::steady_clock::now();
  try {
    for (size_t u = 0; u < std::min<size_t>(units, kSlots - 1); ++u) start_read(u);
    for (size_t u = 0; u < units; ++u) {
      wait(reads[u % kSlots]);
      visit(u, slot(u).first(unit_bytes_[u]));
      if (pass != Pass::kRead) writes[u % kSlots] = transfer(true, u, slot(u));
      if (u + kSlots - 1 < units) start_read(u + kSlots - 1);
    }
    for (Tickets& w : writes) wait(w);
    traffic_.pass_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  } catch (...) {
    try {
      io_.wait_all();  // no request may outlive its buffer
    } catch (...) {    // the first error is the one rethrown
    }
    throw;
  }
}

}  // namespace zerodp::zero
