// SPDX-License-Identifier: Apache-2.0
// CheckpointReader: reads any element range of any unit's state tensor from
// a checkpoint directory, whatever the number of ranks that wrote it.
//
// A range is served from the shard files whose plan shards overlap it (old
// shard boundaries from the manifest's N and comm::shard_range); only the
// chunks that hold the range are read, and each is checked against its
// CRC32C before use. Opening a shard file checks that it exists, has the
// size the manifest records, and that its header belongs to this save
// (rank, N, layout, save id). Every problem is an IoError naming the file
// and what is wrong; nothing is returned unverified.
// verify_file() additionally checks a file's whole-file CRC32C (inspect).
// Thread-safety: one reader per thread (it caches open files and a scratch
// buffer); readers of the same directory are independent.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ckpt/file_io.h"
#include "ckpt/format.h"
#include "ckpt/manifest.h"

namespace zerodp::ckpt {

// A reader reads a record through one scratch buffer of whole chunks, at most
// max(kReadBatchBytes, one chunk): what a resume adds to a rank's memory.
inline constexpr uint64_t kReadBatchBytes = 4u << 20;
inline uint64_t read_scratch_bytes(uint64_t chunk_bytes) {
  return kReadBatchBytes > chunk_bytes ? kReadBatchBytes / chunk_bytes * chunk_bytes : chunk_bytes;
}

struct FileCheck {
  std::string file;    // path
  uint64_t bytes = 0;  // actual size (0 when missing)
  bool ok = false;
  std::string problem;  // empty when ok
};

class CheckpointReader {
 public:
  CheckpointReader(std::string dir, Manifest manifest);
  ~CheckpointReader();

  const Manifest& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }

  // out[i] = element range.offset + i of `tensor` (index into
  // manifest().tensors) of `unit`. REQUIRES out.size() == range.count and
  // the range inside the unit (ShapeError otherwise).
  void read(size_t unit, size_t tensor, comm::ShardRange range, std::span<float> out);
  // Any tensor: values range.offset .. of the tensor (elements, or blocks
  // for a per-block tensor: tensor_layout), value_bytes each, into `out`
  // (range.count * value_bytes bytes).
  void read_bytes(size_t unit, size_t tensor, comm::ShardRange range, std::span<std::byte> out);

  // Reads every byte of rank's file: header, every record header and chunk,
  // and the whole-file CRC32C against the manifest. Never throws for a bad
  // file; the problem is in the result.
  FileCheck verify_file(int rank);

 private:
  struct OpenShard;
  OpenShard& shard(int rank);
  void read_part(int rank, size_t unit, size_t tensor, uint64_t first, uint64_t count, std::byte* out);
  std::string record_name(size_t unit, size_t tensor) const;

  std::string dir_;
  Manifest manifest_;
  std::vector<size_t> unit_counts_;
  std::vector<TensorLayout> layouts_;
  std::vector<std::unique_ptr<OpenShard>> shards_;
  std::vector<std::byte> scratch_;
};

}  // namespace zerodp::ckpt
