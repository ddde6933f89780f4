// SPDX-License-Identifier: Apache-2.0
#include "zero/param_store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace zerodp::zero {
namespace {

// A shard moves in at most this many requests, spread over the device's queue.
constexpr size_t kPiecesPerShard = 8;

}  // namespace

ParamStore::ParamStore(const std::string& dir, int rank, std::vector<size_t> shard_bytes, MemoryLedger& ledger)
    : shard_bytes_(std::move(shard_bytes)),
      chunk_(static_cast<size_t>(
          round_to_direct_block(std::max(kMinOffloadPiece, offload_slot_bytes(shard_bytes_) / kPiecesPerShard)))),
      file_(dir, fmt::format("zerodp-offload-{}-rank{}.params", ::getpid(), rank), "--offload-params",
            ScratchFile::Name::kUnlinkAtOnce),
      staging_(ledger, MemoryCategory::kOffload, static_cast<size_t>(param_staging_bytes(shard_bytes_))),
      io_(static_cast<int>(kPiecesPerShard)) {
  offsets_ = offload_offsets(shard_bytes_);
  file_.reserve(offload_disk_bytes(shard_bytes_));
  aligned_ = direct_aligned(staging_.data());
}

ParamStore::~ParamStore() = default;

std::span<std::byte> ParamStore::staging(size_t unit) { return {aligned_, shard_bytes_[unit]}; }

void ParamStore::read(size_t unit) { transfer(false, unit); }

void ParamStore::write(size_t unit) { transfer(true, unit); }

void ParamStore::transfer(bool write, size_t unit) {
  const auto start = std::chrono::steady_clock::now();
  const size_t bytes = static_cast<size_t>(round_to_direct_block(shard_bytes_[unit]));
  std::vector<AsyncIo::Ticket> tickets;
  for (size_t at = 0; at < bytes; at += chunk_) {
    const size_t n = std::min(chunk_, bytes - at);
    tickets.push_back(write ? io_.write(file_.fd(), aligned_ + at, n, offsets_[unit] + at, file_.path())
                            : io_.read(file_.fd(), aligned_ + at, n, offsets_[unit] + at, file_.path()));
  }
  try {
    for (const AsyncIo::Ticket t : tickets) io_.wait(t);
  } catch (...) {
    try {
      io_.wait_all();  // no request may outlive a transfer
    } catch (...) {    // the first error is the one rethrown
    }
    throw;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  (write ? traffic_.bytes_written : traffic_.bytes_read) += bytes;
  (write ? traffic_.write_seconds : traffic_.read_seconds) += seconds;
}

}  // namespace zerodp::zero
