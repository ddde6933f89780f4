// SPDX-License-Identifier: Apache-2.0
#include "ckpt/offline.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "ckpt/checkpoint_dir.h"
#include "ckpt/file_io.h"
#include "ckpt/shard_writer.h"
#include "ckpt/staged_output.h"
#include "core/error.h"

namespace zerodp::ckpt {

bool InspectReport::ok() const {
  for (const auto& f : files) {
    if (!f.ok) return false;
  }
  return true;
}

InspectReport inspect_checkpoint(const std::string& path) {
  InspectReport report;
  report.path = resolve_checkpoint(path);
  report.manifest = read_manifest(report.path);
  CheckpointReader reader(report.path, report.manifest);
  for (int r = 0; r < report.manifest.ranks; ++r) report.files.push_back(reader.verify_file(r));
  return report;
}

std::vector<float> read_full_tensor(CheckpointReader& reader, size_t tensor) {
  const Manifest& m = reader.manifest();
  const TensorLayout layout = tensor_layout(m.tensors.at(tensor));
  size_t total = 0;
  for (const UnitEntry& u : m.units) total += tensor_length(u.count, layout);
  std::vector<float> full(total);
  std::vector<uint8_t> codes;
  size_t at = 0;
  for (size_t u = 0; u < m.units.size(); ++u) {
    const size_t count = tensor_length(m.units[u].count, layout);
    if (!m.holds(u, tensor)) {
      // A unit that keeps other state (8-bit Adam's fp32 units): zeros.
      at += count;
      continue;
    }
    if (layout.value_bytes == 1) {
      codes.resize(count);
      reader.read_bytes(u, tensor, {0, count}, std::as_writable_bytes(std::span(codes)));
      std::copy(codes.begin(), codes.end(), full.begin() + static_cast<std::ptrdiff_t>(at));
    } else {
      reader.read(u, tensor, {0, count}, std::span<float>(full).subspan(at, count));
    }
    at += count;
  }
  return full;
}

ReshardResult reshard(const std::string& checkpoint, const std::string& out_path, const ReshardOptions& options) {
  const std::string out_dir = without_trailing_slashes(out_path);
  ZDP_CHECK(options.ranks >= 1 && options.ranks <= (1 << 20), ConfigError,
            "[ckpt reshard] --ranks {} must be at least 1", options.ranks);
  const std::string src = resolve_checkpoint(checkpoint);
  check_fresh_output(out_dir, "reshard");
  Manifest in = read_manifest(src);
  CheckpointReader reader(src, in);

  Manifest out = in;
  out.ranks = options.ranks;
  if (options.stage) out.stage = *options.stage;
  if (options.chunk_bytes != 0) out.chunk_bytes = options.chunk_bytes;
  ZDP_CHECK(valid_chunk_bytes(out.chunk_bytes), ConfigError,
            "[ckpt reshard] chunk size {} must be a positive multiple of 4", out.chunk_bytes);
  out.save_id = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}() & 0xFFFFu) << 32);
  out.metadata["resharded_from"] = fmt::format("{} ({} ranks)", src, in.ranks);
  out.shards.clear();

  StagedOutput staged(out_dir, "reshard");
  const std::string& tmp = staged.dir();

  ReshardResult result;
  const std::vector<size_t> counts = in.unit_counts();
  std::vector<std::byte> buffer;
  const std::vector<TensorLayout> layouts = out.tensor_layouts();
  for (int r = 0; r < out.ranks; ++r) {
    const ShardLayout layout(counts, out.ranks, r, layouts, out.chunk_bytes, out.unit_tensors());
    const FileHeader header{out.format_version,
                            static_cast<uint32_t>(r),
                            static_cast<uint32_t>(out.ranks),
                            static_cast<uint32_t>(counts.size()),
                            static_cast<uint32_t>(out.tensors.size()),
                            out.chunk_bytes,
                            out.save_id};
    const std::string name = shard_file_name(r, out.ranks);
    ShardWriter writer(join_path(tmp, name + ".tmp"), header, layout);
    for (size_t u = 0; u < counts.size(); ++u) {
      for (size_t t = 0; t < out.tensors.size(); ++t) {
        const comm::ShardRange range = layout.range(u, t);
        buffer.resize(range.count * layouts[t].value_bytes);
        result.largest_record_bytes = std::max<uint64_t>(result.largest_record_bytes, buffer.size());
        reader.read_bytes(u, t, range, buffer);
        writer.write_record_bytes(u, t, buffer);
      }
    }
    ShardFileInfo info = writer.finish();
    rename_path(join_path(tmp, name + ".tmp"), join_path(tmp, name));
    info.file = name;
    result.bytes_total += info.bytes;
    out.shards.push_back(info);
  }
  sync_directory(tmp);
  write_manifest(tmp, out);
  staged.commit();
  result.path = out_dir;
  return result;
}

}  // namespace zerodp::ckpt
