// SPDX-License-Identifier: Apache-2.0
#include "ckpt/shard_writer.h"

#include <filesystem>

#include "ckpt/crc32c.h"
#include "core/error.h"

namespace zerodp::ckpt {

ShardWriter::ShardWriter(const std::string& path, const FileHeader& header, const ShardLayout& layout)
    : ShardWriter(path, header, layout, Part{0, layout.num_units()}) {}

ShardWriter::ShardWriter(const std::string& path, const FileHeader& header, const ShardLayout& layout, Part part)
    : file_(path,
            part.unit_begin == 0 && part.unit_end == layout.num_units() ? File::Mode::kCreate : File::Mode::kShared),
      layout_(layout),
      next_(part.unit_begin * layout.num_tensors()),
      end_(part.unit_end * layout.num_tensors()) {
  ZDP_CHECK(header.chunk_bytes == layout.chunk_bytes() && header.num_tensors == layout.num_tensors() &&
                header.num_units == layout.num_units(),
            ShapeError, "[ckpt write] {}: the file header does not match the shard layout", path);
  ZDP_CHECK(part.unit_begin <= part.unit_end && part.unit_end <= layout.num_units(), ShapeError,
            "[ckpt write] {}: units [{}, {}) are not a part of the file's {}", path, part.unit_begin, part.unit_end,
            layout.num_units());
  if (part.unit_begin == 0) {
    put(encode(header));
    return;
  }
  start_ = bytes_ = layout.record(part.unit_begin, 0).position;  // every unit holds "master"
  file_.seek(start_);
}

void ShardWriter::put(std::span<const std::byte> data) {
  file_.append(data);
  crc_ = crc32c_extend(crc_, data.data(), data.size());
  bytes_ += data.size();
}

void ShardWriter::write_record(size_t unit, size_t tensor, std::span<const float> data) {
  ZDP_CHECK(tensor >= layout_.num_tensors() || layout_.layout(tensor).value_bytes == sizeof(float), ShapeError,
            "[ckpt write] {}: tensor {} is not float32: write its bytes", file_.path(), tensor);
  write_record_bytes(unit, tensor, std::as_bytes(data));
}

void ShardWriter::write_record_bytes(size_t unit, size_t tensor, std::span<const std::byte> payload) {
  ZDP_CHECK(!done(), ShapeError, "[ckpt write] {}: all records are written already", file_.path());
  const size_t want_unit = next_ / layout_.num_tensors();
  const size_t want_tensor = next_ % layout_.num_tensors();
  ZDP_CHECK(unit == want_unit && tensor == want_tensor, ShapeError,
            "[ckpt write] {}: record (unit {}, tensor {}) written out of order; expected (unit {}, tensor {})",
            file_.path(), unit, tensor, want_unit, want_tensor);
  const ShardLayout::Record& rec = layout_.record(unit, tensor);
  ZDP_CHECK_EQ(payload.size(), rec.header.count * layout_.layout(tensor).value_bytes, ShapeError,
               "[ckpt write] record bytes");
  ZDP_CHECK_EQ(bytes_, rec.position, ShapeError, "[ckpt write] record position");

  const uint32_t cb = layout_.chunk_bytes();
  chunk_crcs_.resize(rec.header.num_chunks);
  for (size_t c = 0; c < chunk_crcs_.size(); ++c) {
    const size_t begin = c * cb;
    chunk_crcs_[c] = crc32c(payload.data() + begin, std::min<size_t>(cb, payload.size() - begin));
  }
  put(encode(rec.header));
  put(std::as_bytes(std::span<const uint32_t>(chunk_crcs_)));
  put(payload);
  ++next_;
}

ShardFileInfo ShardWriter::finish() {
  ZDP_CHECK(done(), ShapeError, "[ckpt write] {}: finished before record {} of {}", file_.path(), next_, end_);
  const uint64_t end = end_ == layout_.num_units() * layout_.num_tensors()
                           ? layout_.file_size()
                           : layout_.record(end_ / layout_.num_tensors(), 0).position;
  ZDP_CHECK_EQ(bytes_, end, ShapeError, "[ckpt write] file size");
  file_.sync();
  file_.close();
  return {std::filesystem::path(file_.path()).filename().string(), bytes_ - start_, crc_};
}

}  // namespace zerodp::ckpt
