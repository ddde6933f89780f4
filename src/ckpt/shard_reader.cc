// SPDX-License-Identifier: Apache-2.0
#include "ckpt/shard_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ckpt/crc32c.h"
#include "core/error.h"

namespace zerodp::ckpt {
namespace {

// Chunks are read in batches of about this many bytes (the reader's only
// buffer, besides the caller's output).
constexpr uint64_t kBatchBytes = kReadBatchBytes;

}  // namespace

struct CheckpointReader::OpenShard {
  File file;
  ShardLayout layout;
  std::vector<bool> header_checked;  // per record
};

CheckpointReader::CheckpointReader(std::string dir, Manifest manifest)
    : dir_(std::move(dir)),
      manifest_(std::move(manifest)),
      unit_counts_(manifest_.unit_counts()),
      layouts_(manifest_.tensor_layouts()) {
  shards_.resize(static_cast<size_t>(manifest_.ranks));
}

CheckpointReader::~CheckpointReader() = default;

std::string CheckpointReader::record_name(size_t unit, size_t tensor) const {
  return fmt::format("unit {} (\"{}\") tensor \"{}\"", unit, manifest_.units[unit].name, manifest_.tensors[tensor]);
}

CheckpointReader::OpenShard& CheckpointReader::shard(int rank) {
  auto& slot = shards_[static_cast<size_t>(rank)];
  if (slot) return *slot;
  const ShardFileInfo& info = manifest_.shards[static_cast<size_t>(rank)];
  const std::string path = join_path(dir_, info.file);
  File file(path, File::Mode::kRead);
  ShardLayout layout(unit_counts_, manifest_.ranks, rank, layouts_, manifest_.chunk_bytes, manifest_.unit_tensors());
  const uint64_t size = file.size();
  ZDP_CHECK(size >= info.bytes, InputFileError, "[ckpt] {}: truncated: the file has {} bytes, the manifest says {}",
            path, size, info.bytes);
  ZDP_CHECK(size == info.bytes, InputFileError, "[ckpt] {}: the file has {} bytes, more than the {} the manifest says",
            path, size, info.bytes);
  ZDP_CHECK(size == layout.file_size(), InputFileError,
            "[ckpt] {}: the manifest records {} bytes but its layout needs {}: the manifest is inconsistent", path,
            info.bytes, layout.file_size());
  std::array<std::byte, kFileHeaderBytes> raw{};
  file.read_at(0, raw);
  FileHeader h;
  std::string problem;
  ZDP_CHECK(decode(raw, h, problem), InputFileError, "[ckpt] {}: {}", path, problem);
  const FileHeader want{manifest_.format_version,
                        static_cast<uint32_t>(rank),
                        static_cast<uint32_t>(manifest_.ranks),
                        static_cast<uint32_t>(unit_counts_.size()),
                        static_cast<uint32_t>(manifest_.tensors.size()),
                        manifest_.chunk_bytes,
                        manifest_.save_id};
  ZDP_CHECK(h.save_id == want.save_id, InputFileError,
            "[ckpt] {}: belongs to a different save (save id {:#x}, the manifest's is {:#x}): the directory mixes "
            "files of two checkpoints",
            path, h.save_id, want.save_id);
  ZDP_CHECK(h == want, InputFileError,
            "[ckpt] {}: header says version {}, rank {} of {}, {} units, {} tensors, {}-byte chunks; the manifest "
            "expects version {}, rank {} of {}, {} units, {} tensors, {}-byte chunks",
            path, h.version, h.rank, h.ranks, h.num_units, h.num_tensors, h.chunk_bytes, want.version, want.rank,
            want.ranks, want.num_units, want.num_tensors, want.chunk_bytes);
  const size_t records = unit_counts_.size() * manifest_.tensors.size();
  slot = std::make_unique<OpenShard>(OpenShard{std::move(file), std::move(layout), std::vector<bool>(records)});
  return *slot;
}

void CheckpointReader::read(size_t unit, size_t tensor, comm::ShardRange range, std::span<float> out) {
  ZDP_CHECK(tensor >= layouts_.size() || layouts_[tensor].value_bytes == sizeof(float), ShapeError,
            "[ckpt read] tensor {} is not float32: read its bytes", tensor);
  ZDP_CHECK(out.size() == range.count, ShapeError, "[ckpt read] range of {} values into {} outputs", range.count,
            out.size());
  read_bytes(unit, tensor, range, std::as_writable_bytes(out));
}

void CheckpointReader::read_bytes(size_t unit, size_t tensor, comm::ShardRange range, std::span<std::byte> out) {
  ZDP_CHECK(unit < unit_counts_.size() && tensor < manifest_.tensors.size(), ShapeError,
            "[ckpt read] unit {} / tensor {} out of range ({} units, {} tensors)", unit, tensor, unit_counts_.size(),
            manifest_.tensors.size());
  ZDP_CHECK(range.count == 0 || manifest_.holds(unit, tensor), InputFileError,
            "[ckpt read] {}: {} is not held: that unit keeps other state tensors ({})", dir_, record_name(unit, tensor),
            fmt::join(manifest_.tensors_of(unit), ", "));
  const TensorLayout& layout = layouts_[tensor];
  const uint64_t length = tensor_length(unit_counts_[unit], layout);
  ZDP_CHECK(range.offset + range.count <= length && out.size() == range.count * layout.value_bytes, ShapeError,
            "[ckpt read] range [{}, {}) of unit {} ({} values) into {} bytes", range.offset, range.offset + range.count,
            unit, length, out.size());
  const size_t end = range.offset + range.count;
  for (int r = 0; r < manifest_.ranks && range.count > 0; ++r) {
    const comm::ShardRange held = record_range(unit_counts_[unit], manifest_.ranks, r, layout);
    const size_t lo = std::max(held.offset, range.offset);
    const size_t hi = std::min(held.offset + held.count, end);
    if (lo >= hi) continue;
    read_part(r, unit, tensor, lo - held.offset, hi - lo, out.data() + (lo - range.offset) * layout.value_bytes);
  }
}

// Values [first, first + count) of one record (record-relative).
void CheckpointReader::read_part(int rank, size_t unit, size_t tensor, uint64_t first, uint64_t count, std::byte* out) {
  OpenShard& s = shard(rank);
  const ShardLayout::Record& rec = s.layout.record(unit, tensor);
  const size_t index = unit * manifest_.tensors.size() + tensor;
  const std::string& path = s.file.path();
  if (!s.header_checked[index]) {
    std::array<std::byte, kRecordHeaderBytes> raw{};
    s.file.read_at(rec.position, raw);
    RecordHeader h;
    std::string problem;
    ZDP_CHECK(decode(raw, h, problem), InputFileError, "[ckpt] {}: {} of {} at byte {}", path, problem,
              record_name(unit, tensor), rec.position);
    ZDP_CHECK(h == rec.header, InputFileError,
              "[ckpt] {}: the record at byte {} says unit {} tensor {} elements [{}, +{}); expected unit {} tensor {} "
              "elements [{}, +{})",
              path, rec.position, h.unit, h.tensor, h.offset, h.count, rec.header.unit, rec.header.tensor,
              rec.header.offset, rec.header.count);
    s.header_checked[index] = true;
  }
  const uint64_t cb = manifest_.chunk_bytes;
  const uint64_t value_bytes = layouts_[tensor].value_bytes;
  const uint64_t total_bytes = rec.header.count * value_bytes;
  const uint64_t want_begin = first * value_bytes;
  const uint64_t want_end = (first + count) * value_bytes;
  const uint64_t chunks_per_batch = std::max<uint64_t>(1, kBatchBytes / cb);
  std::vector<uint32_t> stored;
  for (uint64_t c0 = want_begin / cb; c0 * cb < want_end; c0 += chunks_per_batch) {
    const uint64_t c1 = std::min<uint64_t>((want_end + cb - 1) / cb, c0 + chunks_per_batch);
    const uint64_t begin = c0 * cb;
    const uint64_t end = std::min(c1 * cb, total_bytes);
    stored.resize(c1 - c0);
    s.file.read_at(rec.crc_position() + 4 * c0, std::as_writable_bytes(std::span(stored)));
    scratch_.resize(end - begin);
    s.file.read_at(rec.payload_position() + begin, scratch_);
    for (uint64_t c = c0; c < c1; ++c) {
      const uint64_t b = c * cb - begin;
      const uint32_t computed = crc32c(scratch_.data() + b, std::min(cb, end - begin - b));
      ZDP_CHECK(computed == stored[c - c0], InputFileError,
                "[ckpt] {}: chunk {} of {} fails its CRC32C (stored {:#010x}, computed {:#010x}): the file is "
                "corrupt; restore it or load another checkpoint",
                path, c, record_name(unit, tensor), stored[c - c0], computed);
    }
    const uint64_t copy_begin = std::max(begin, want_begin);
    const uint64_t copy_end = std::min(end, want_end);
    std::memcpy(out + (copy_begin - want_begin), scratch_.data() + (copy_begin - begin), copy_end - copy_begin);
  }
}

FileCheck CheckpointReader::verify_file(int rank) {
  FileCheck check;
  const ShardFileInfo& info = manifest_.shards[static_cast<size_t>(rank)];
  check.file = join_path(dir_, info.file);
  try {
    OpenShard& s = shard(rank);
    check.bytes = s.file.size();
    // Every record and chunk (headers and per-chunk CRCs), in pieces.
    std::vector<std::byte> piece;
    for (size_t u = 0; u < unit_counts_.size(); ++u) {
      for (size_t t = 0; t < manifest_.tensors.size(); ++t) {
        const uint64_t count = s.layout.record(u, t).header.count;
        for (uint64_t at = 0; at < count || (at == 0 && count == 0); at += kBatchBytes / 4) {
          const uint64_t n = std::min<uint64_t>(kBatchBytes / 4, count - at);
          piece.resize(n * layouts_[t].value_bytes);
          read_part(rank, u, t, at, n, piece.data());
          if (count == 0) break;
        }
      }
    }
    // Then the whole-file checksum.
    uint32_t crc = 0;
    for (uint64_t at = 0; at < check.bytes; at += kBatchBytes) {
      scratch_.resize(std::min<uint64_t>(kBatchBytes, check.bytes - at));
      s.file.read_at(at, scratch_);
      crc = crc32c_extend(crc, scratch_.data(), scratch_.size());
    }
    ZDP_CHECK(crc == info.crc32c, InputFileError,
              "[ckpt] {}: the whole-file CRC32C is {:#010x}, the manifest says {:#010x}: the file is corrupt",
              check.file, crc, info.crc32c);
    check.ok = true;
  } catch (const Error& e) {
    check.problem = e.message();
  }
  return check;
}

}  // namespace zerodp::ckpt
