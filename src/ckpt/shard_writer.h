// SPDX-License-Identifier: Apache-2.0
// ShardWriter: streams one rank's shard file, record by record in the
// layout's order (unit-major, then tensor), computing each chunk's CRC32C
// and the whole file's CRC32C on the way. The caller writes to a temporary
// name and renames after finish() (which fsyncs).
// A part: the records of units [unit_begin, unit_end) only, written in
// place into a file other writers write the rest of (the shard file of a
// pipeline's replica, whose stages hold different units: checkpoint.h). The
// part that starts at unit 0 writes the header too; finish() returns the
// part's size and CRC, which crc32c_combine joins in file order.
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
  struct Part {
    size_t unit_begin = 0, unit_end = 0;
  };
  // The part `part` of the file at `path` (opened File::Mode::kShared, at the
  // part's first record).
  ShardWriter(const std::string& path, const FileHeader& header, const ShardLayout& layout, Part part);

  // The next record must be (unit, tensor) in layout order, and data.size()
  // its element count (ShapeError otherwise).
  void write_record(size_t unit, size_t tensor, std::span<const float> data);
  // Any tensor: the record's values as bytes (count * value_bytes).
  void write_record_bytes(size_t unit, size_t tensor, std::span<const std::byte> payload);
  bool done() const { return next_ == end_; }
  // REQUIRES done(). Flushes, fsyncs and closes; returns the size and CRC
  // (file is the file name, without the directory): the part's, for a part.
  ShardFileInfo finish();
  // Where the part starts in the file (0 for a whole file).
  uint64_t start() const { return start_; }

 private:
  File file_;
  const ShardLayout& layout_;
  size_t next_ = 0, end_ = 0;  // records, in layout order
  uint64_t start_ = 0;         // the file offset of the first byte written
  uint64_t bytes_ = 0;
  uint32_t crc_ = 0;
  std::vector<uint32_t> chunk_crcs_;

  void put(std::span<const std::byte> data);
};

}  // namespace zerodp::ckpt
