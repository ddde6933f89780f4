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
//   payload = count little-endian float32; chunk i is its bytes
//             [i * chunk_bytes, min((i + 1) * chunk_bytes, 4 * count))
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
#include <vector>

#include "comm/shard.h"

namespace zerodp::ckpt {

static_assert(std::endian::native == std::endian::little, "checkpoint files are little-endian");

inline constexpr uint32_t kFormatVersion = 1;
inline constexpr std::array<char, 8> kShardMagic = {'Z', 'D', 'P', 'S', 'H', 'A', 'R', 'D'};
inline constexpr uint32_t kRecordMagic = 0x4345525Au;  // "ZREC" as bytes
inline constexpr size_t kFileHeaderBytes = 44;
inline constexpr size_t kRecordHeaderBytes = 36;
inline constexpr uint32_t kDefaultChunkBytes = 1u << 16;  // 64 KiB: 4 bytes of CRC per 64 KiB
inline constexpr uint32_t kMaxChunkBytes = 1u << 30;
inline constexpr const char* kManifestName = "manifest.json";

// "shard-00003-of-00008.bin"
std::string shard_file_name(int rank, int ranks);

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
  uint64_t offset = 0;  // first element of the unit held here
  uint64_t count = 0;   // elements
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
uint32_t num_chunks(uint64_t count, uint32_t chunk_bytes);

// Where each record of one rank's file lies.
class ShardLayout {
 public:
  struct Record {
    RecordHeader header;                // what the record header must say
    uint64_t position = 0;              // byte offset of the record header in the file
    uint64_t crc_position() const;      // the chunk CRC table
    uint64_t payload_position() const;  // the first float
  };

  ShardLayout(std::span<const size_t> unit_counts, int ranks, int rank, size_t num_tensors, uint32_t chunk_bytes);

  const Record& record(size_t unit, size_t tensor) const { return records_[unit * num_tensors_ + tensor]; }
  comm::ShardRange range(size_t unit) const;  // the rank's shard of the unit
  uint64_t file_size() const { return file_size_; }
  uint32_t chunk_bytes() const { return chunk_bytes_; }
  size_t num_tensors() const { return num_tensors_; }
  size_t num_units() const { return num_tensors_ == 0 ? 0 : records_.size() / num_tensors_; }

 private:
  size_t num_tensors_;
  uint32_t chunk_bytes_;
  std::vector<Record> records_;
  uint64_t file_size_ = 0;
};

}  // namespace zerodp::ckpt
