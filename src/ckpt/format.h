// SPDX-License-Identifier: Apache-2.0
// The on-disk layout of a checkpoint's shard files (docs/checkpoint-format.md
// is the byte-by-byte specification; this file is its code).
//
// A shard file holds one rank's share of every state tensor: for each unit u
// (in flat order) and each tensor t (the manifest's "tensors" list, e.g.
// master, exp_avg, exp_avg_sq), one record with the rank's plan shard of that
// unit, comm::shard_range(unit_count(u), N, rank). So a record's place in the
// file follows from the manifest alone (ShardLayout), and a reader can seek
// to exactly the bytes it needs.
//
//   file   := file_header record*
//   record := record_header chunk_crc[num_chunks] payload
//   payload = count little-endian values (float32, or one byte for 8-bit
//             Adam's codes); chunk i is its bytes
//             [i * chunk_bytes, min((i + 1) * chunk_bytes, value_bytes * count))
//
// Version 2 adds 8-bit Adam's tensors (tensor_layout): one-byte codes per
// element and fp32 scales per 2048-element block of a unit. A checkpoint
// without them is written as version 1, so older readers still read it.
// Version 3 lets a unit hold a subset of the tensors (8-bit Adam's units
// that keep fp32 moments hold exp_avg and exp_avg_sq, the others the 8-bit
// tensors): the records of the tensors a unit does not hold are empty.
// Only such a checkpoint is written as version 3.
//
// Every header ends with the CRC32C of its other bytes, and every chunk has a
// CRC32C, so any part of a record can be read and verified on its own.
// All integers are little-endian; the code requires a little-endian host.
// Thread-safety: plain values and pure functions.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "comm/shard.h"

namespace zerodp::ckpt {

static_assert(std::endian::native == std::endian::little, "checkpoint files are little-endian");

inline constexpr uint32_t kFormatVersion = 3;  // the newest version read and written
inline constexpr std::array<char, 8> kShardMagic = {'Z', 'D', 'P', 'S', 'H', 'A', 'R', 'D'};
inline constexpr uint32_t kRecordMagic = 0x4345525Au;  // "ZREC" as bytes
inline constexpr size_t kFileHeaderBytes = 44;
inline constexpr size_t kRecordHeaderBytes = 36;
inline constexpr uint32_t kDefaultChunkBytes = 1u << 16;  // 64 KiB: 4 bytes of CRC per 64 KiB
inline constexpr uint32_t kMaxChunkBytes = 1u << 30;
inline constexpr const char* kManifestName = "manifest.json";

// "shard-00003-of-00008.bin"
std::string shard_file_name(int rank, int ranks);

// How a tensor's values are stored: value_bytes each (4: float32, 1: a
// byte), one per element of the unit (block 0) or one per `block` elements
// of the unit, blocks anchored at its first element.
struct TensorLayout {
  uint32_t value_bytes = 4;
  uint32_t block = 0;
  friend bool operator==(const TensorLayout&, const TensorLayout&) = default;
};
// By name: "exp_avg_q8", "exp_avg_sq_q8" {1, 0}; "exp_avg_absmax",
// "exp_avg_sq_absmax" {4, 2048} (version 2); every other tensor {4, 0}.
TensorLayout tensor_layout(std::string_view name);
// 1 when every tensor is float32 per element, else 2; 3 when some unit holds
// only a subset of the tensors (per_unit_tensors).
uint32_t format_version_for(std::span<const std::string> tensors, bool per_unit_tensors = false);
// Which tensors each unit holds: unit_tensors[u] lists the indices of unit
// u's tensors, ascending; an empty span, or an empty list for a unit: all.
// A tensor a unit does not hold has an empty record there.
bool unit_holds(std::span<const std::vector<uint32_t>> unit_tensors, size_t unit, size_t tensor);
// The values of a unit of `unit_count` elements: the count, or its blocks.
uint64_t tensor_length(uint64_t unit_count, const TensorLayout& layout);
// The values rank `rank`'s record holds: its plan shard of the unit's
// elements, or the blocks whose first element lies in that plan shard.
comm::ShardRange record_range(uint64_t unit_count, int ranks, int rank, const TensorLayout& layout);

struct FileHeader {
  uint32_t version = kFormatVersion;
  uint32_t rank = 0;
  uint32_t ranks = 0;
  uint32_t num_units = 0;
  uint32_t num_tensors = 0;
  uint32_t chunk_bytes = kDefaultChunkBytes;
  uint64_t save_id = 0;
  friend bool operator==(const FileHeader&, const FileHeader&) = default;
};

struct RecordHeader {
  uint32_t unit = 0;
  uint32_t tensor = 0;
  uint32_t num_chunks = 0;
  uint64_t offset = 0;  // first value of the unit's tensor held here (element or block)
  uint64_t count = 0;   // values
  friend bool operator==(const RecordHeader&, const RecordHeader&) = default;
};

std::array<std::byte, kFileHeaderBytes> encode(const FileHeader& h);
std::array<std::byte, kRecordHeaderBytes> encode(const RecordHeader& h);
// Decoding checks the magic and the CRC; on failure it returns false and
// sets `problem` to a phrase ("bad magic", "header CRC mismatch").
bool decode(std::span<const std::byte, kFileHeaderBytes> bytes, FileHeader& out, std::string& problem);
bool decode(std::span<const std::byte, kRecordHeaderBytes> bytes, RecordHeader& out, std::string& problem);

// chunk_bytes must be a positive multiple of 4, at most kMaxChunkBytes.
bool valid_chunk_bytes(uint64_t chunk_bytes);
uint32_t num_chunks(uint64_t count, uint32_t chunk_bytes, uint32_t value_bytes = 4);

// Where each record of one rank's file lies.
class ShardLayout {
 public:
  struct Record {
    RecordHeader header;                // what the record header must say
    uint64_t position = 0;              // byte offset of the record header in the file
    uint64_t crc_position() const;      // the chunk CRC table
    uint64_t payload_position() const;  // the first value
  };

  // Every tensor float32 per element (version 1's only layout).
  ShardLayout(std::span<const size_t> unit_counts, int ranks, int rank, size_t num_tensors, uint32_t chunk_bytes);
  // unit_tensors: which tensors each unit holds (unit_holds; version 3).
  ShardLayout(std::span<const size_t> unit_counts, int ranks, int rank, std::span<const TensorLayout> tensors,
              uint32_t chunk_bytes, std::span<const std::vector<uint32_t>> unit_tensors = {});

  const Record& record(size_t unit, size_t tensor) const { return records_[unit * num_tensors_ + tensor]; }
  comm::ShardRange range(size_t unit) const;  // the rank's shard of the unit's elements (tensor 0, master)
  comm::ShardRange range(size_t unit, size_t tensor) const;  // the values of one record
  const TensorLayout& layout(size_t tensor) const { return layouts_[tensor]; }
  uint64_t file_size() const { return file_size_; }
  uint32_t chunk_bytes() const { return chunk_bytes_; }
  size_t num_tensors() const { return num_tensors_; }
  size_t num_units() const { return num_tensors_ == 0 ? 0 : records_.size() / num_tensors_; }

 private:
  size_t num_tensors_;
  std::vector<TensorLayout> layouts_;
  uint32_t chunk_bytes_;
  std::vector<Record> records_;
  uint64_t file_size_ = 0;
};

}  // namespace zerodp::ckpt
