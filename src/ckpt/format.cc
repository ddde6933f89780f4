// SPDX-License-Identifier: Apache-2.0
#include "ckpt/format.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ckpt/crc32c.h"
#include "core/error.h"

namespace zerodp::ckpt {
namespace {

template <typename T>
void put(std::byte* base, size_t& at, T value) {
  std::memcpy(base + at, &value, sizeof(T));
  at += sizeof(T);
}

template <typename T>
T get(const std::byte* base, size_t& at) {
  T value;
  std::memcpy(&value, base + at, sizeof(T));
  at += sizeof(T);
  return value;
}

}  // namespace

std::string shard_file_name(int rank, int ranks) { return fmt::format("shard-{:05d}-of-{:05d}.bin", rank, ranks); }

std::array<std::byte, kFileHeaderBytes> encode(const FileHeader& h) {
  std::array<std::byte, kFileHeaderBytes> b{};
  std::memcpy(b.data(), kShardMagic.data(), kShardMagic.size());
  size_t at = kShardMagic.size();
  put(b.data(), at, h.version);
  put(b.data(), at, h.rank);
  put(b.data(), at, h.ranks);
  put(b.data(), at, h.num_units);
  put(b.data(), at, h.num_tensors);
  put(b.data(), at, h.chunk_bytes);
  put(b.data(), at, h.save_id);
  put(b.data(), at, crc32c(b.data(), at));
  return b;
}

std::array<std::byte, kRecordHeaderBytes> encode(const RecordHeader& h) {
  std::array<std::byte, kRecordHeaderBytes> b{};
  size_t at = 0;
  put(b.data(), at, kRecordMagic);
  put(b.data(), at, h.unit);
  put(b.data(), at, h.tensor);
  put(b.data(), at, h.num_chunks);
  put(b.data(), at, h.offset);
  put(b.data(), at, h.count);
  put(b.data(), at, crc32c(b.data(), at));
  return b;
}

bool decode(std::span<const std::byte, kFileHeaderBytes> bytes, FileHeader& out, std::string& problem) {
  if (std::memcmp(bytes.data(), kShardMagic.data(), kShardMagic.size()) != 0) {
    problem = "does not start with the shard magic \"ZDPSHARD\" (not a zerodp shard file)";
    return false;
  }
  size_t at = kFileHeaderBytes - 4;
  const uint32_t stored = get<uint32_t>(bytes.data(), at);
  const uint32_t computed = crc32c(bytes.data(), kFileHeaderBytes - 4);
  if (stored != computed) {
    problem = fmt::format("file header fails its CRC32C (stored {:#010x}, computed {:#010x})", stored, computed);
    return false;
  }
  at = kShardMagic.size();
  out.version = get<uint32_t>(bytes.data(), at);
  out.rank = get<uint32_t>(bytes.data(), at);
  out.ranks = get<uint32_t>(bytes.data(), at);
  out.num_units = get<uint32_t>(bytes.data(), at);
  out.num_tensors = get<uint32_t>(bytes.data(), at);
  out.chunk_bytes = get<uint32_t>(bytes.data(), at);
  out.save_id = get<uint64_t>(bytes.data(), at);
  return true;
}

bool decode(std::span<const std::byte, kRecordHeaderBytes> bytes, RecordHeader& out, std::string& problem) {
  size_t at = 0;
  if (get<uint32_t>(bytes.data(), at) != kRecordMagic) {
    problem = "record header does not start with the record magic \"ZREC\"";
    return false;
  }
  at = kRecordHeaderBytes - 4;
  const uint32_t stored = get<uint32_t>(bytes.data(), at);
  const uint32_t computed = crc32c(bytes.data(), kRecordHeaderBytes - 4);
  if (stored != computed) {
    problem = fmt::format("record header fails its CRC32C (stored {:#010x}, computed {:#010x})", stored, computed);
    return false;
  }
  at = 4;
  out.unit = get<uint32_t>(bytes.data(), at);
  out.tensor = get<uint32_t>(bytes.data(), at);
  out.num_chunks = get<uint32_t>(bytes.data(), at);
  out.offset = get<uint64_t>(bytes.data(), at);
  out.count = get<uint64_t>(bytes.data(), at);
  return true;
}

bool valid_chunk_bytes(uint64_t chunk_bytes) {
  return chunk_bytes >= 4 && chunk_bytes % 4 == 0 && chunk_bytes <= kMaxChunkBytes;
}

uint32_t num_chunks(uint64_t count, uint32_t chunk_bytes, uint32_t value_bytes) {
  return static_cast<uint32_t>((count * value_bytes + chunk_bytes - 1) / chunk_bytes);
}

TensorLayout tensor_layout(std::string_view name) {
  if (name == "exp_avg_q8" || name == "exp_avg_sq_q8") return {.value_bytes = 1, .block = 0};
  if (name == "exp_avg_absmax" || name == "exp_avg_sq_absmax") return {.value_bytes = 4, .block = 2048};
  return {};
}

uint32_t format_version_for(std::span<const std::string> tensors, bool per_unit_tensors) {
  if (per_unit_tensors) return 3;
  for (const std::string& t : tensors) {
    if (tensor_layout(t) != TensorLayout{}) return 2;
  }
  return 1;
}

bool unit_holds(std::span<const std::vector<uint32_t>> unit_tensors, size_t unit, size_t tensor) {
  if (unit >= unit_tensors.size() || unit_tensors[unit].empty()) return true;
  const std::vector<uint32_t>& held = unit_tensors[unit];
  return std::binary_search(held.begin(), held.end(), static_cast<uint32_t>(tensor));
}

uint64_t tensor_length(uint64_t unit_count, const TensorLayout& layout) {
  return layout.block == 0 ? unit_count : (unit_count + layout.block - 1) / layout.block;
}

comm::ShardRange record_range(uint64_t unit_count, int ranks, int rank, const TensorLayout& layout) {
  const comm::ShardRange r = comm::shard_range(unit_count, ranks, rank);
  if (layout.block == 0) return r;
  const uint64_t first = (r.offset + layout.block - 1) / layout.block;
  const uint64_t end = (r.offset + r.count + layout.block - 1) / layout.block;
  return {first, end - first};
}

uint64_t ShardLayout::Record::crc_position() const { return position + kRecordHeaderBytes; }
uint64_t ShardLayout::Record::payload_position() const { return crc_position() + 4ull * header.num_chunks; }

ShardLayout::ShardLayout(std::span<const size_t> unit_counts, int ranks, int rank, size_t num_tensors,
                         uint32_t chunk_bytes)
    : ShardLayout(unit_counts, ranks, rank, std::vector<TensorLayout>(num_tensors), chunk_bytes) {}

ShardLayout::ShardLayout(std::span<const size_t> unit_counts, int ranks, int rank,
                         std::span<const TensorLayout> tensors, uint32_t chunk_bytes,
                         std::span<const std::vector<uint32_t>> unit_tensors)
    : num_tensors_(tensors.size()), layouts_(tensors.begin(), tensors.end()), chunk_bytes_(chunk_bytes) {
  const size_t num_tensors = num_tensors_;
  ZDP_CHECK(valid_chunk_bytes(chunk_bytes), ConfigError,
            "[ckpt] chunk size {} bytes must be a positive multiple of 4 up to {}", chunk_bytes, kMaxChunkBytes);
  ZDP_CHECK(num_tensors >= 1, ConfigError, "[ckpt] a shard holds at least one tensor (master)");
  records_.reserve(unit_counts.size() * num_tensors);
  uint64_t at = kFileHeaderBytes;
  for (size_t u = 0; u < unit_counts.size(); ++u) {
    for (size_t t = 0; t < num_tensors; ++t) {
      const TensorLayout& l = layouts_[t];
      const comm::ShardRange r =
          unit_holds(unit_tensors, u, t) ? record_range(unit_counts[u], ranks, rank, l) : comm::ShardRange{0, 0};
      Record rec;
      rec.header = {static_cast<uint32_t>(u), static_cast<uint32_t>(t), num_chunks(r.count, chunk_bytes, l.value_bytes),
                    r.offset, r.count};
      rec.position = at;
      at = rec.payload_position() + uint64_t{l.value_bytes} * r.count;
      records_.push_back(rec);
    }
  }
  file_size_ = at;
}

comm::ShardRange ShardLayout::range(size_t unit) const { return range(unit, 0); }

comm::ShardRange ShardLayout::range(size_t unit, size_t tensor) const {
  const RecordHeader& h = records_[unit * num_tensors_ + tensor].header;
  return {h.offset, h.count};
}

}  // namespace zerodp::ckpt
