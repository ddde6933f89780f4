// SPDX-License-Identifier: Apache-2.0
// ShardWriter: streams one rank's shard file, record by record in the
// layout's order (unit-major, then tensor), computing each chunk's CRC32C
// and the whole file's CRC32C on the way. The caller writes to a temporary
// name and renames after finish() (which fsyncs).
// Thread-safety: one writer per thread; distinct writers are independent.
#pragma once

#include <span>
#include <string>

#include "ckpt/file_io.h"
#include "ckpt/format.h"
#include "ckpt/manifest.h"

namespace zerodp::ckpt {

class ShardWriter {
 public:
  // Creates (truncates) `path` and writes the file header. `layout` must
  // outlive the writer and match header (ranks, rank, units, tensors, chunk).
  ShardWriter(const std::string& path, const FileHeader& header, const ShardLayout& layout);

  // The next record must be (unit, tensor) in layout order, and data.size()
  // its element count (ShapeError otherwise).
  void write_record(size_t unit, size_t tensor, std::span<const float> data);
  // Any tensor: the record's values as bytes (count * value_bytes).
  void write_record_bytes(size_t unit, size_t tensor, std::span<const std::byte> payload);
  bool done() const { return next_ == layout_.num_units() * layout_.num_tensors(); }
  // REQUIRES done(). Flushes, fsyncs and closes; returns the size and CRC
  // (file is the file name, without the directory).
  ShardFileInfo finish();

 private:
  File file_;
  const ShardLayout& layout_;
  size_t next_ = 0;
  uint64_t bytes_ = 0;
  uint32_t crc_ = 0;
  std::vector<uint32_t> chunk_crcs_;

  void put(std::span<const std::byte> data);
};

}  // namespace zerodp::ckpt
