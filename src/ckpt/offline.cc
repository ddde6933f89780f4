// SPDX-License-Identifier: Apache-2.0
#include "ckpt/offline.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "ckpt/checkpoint_dir.h"
#include "ckpt/export_format.h"
#include "ckpt/file_io.h"
#include "ckpt/hf_format.h"
#include "ckpt/model_record.h"
#include "ckpt/shard_writer.h"
#include "core/error.h"
#include "core/process_memory.h"

namespace zerodp::ckpt {
namespace {

namespace fs = std::filesystem;

void check_fresh_output(const std::string& out_dir, const char* what) {
  std::error_code ec;
  if (!fs::exists(out_dir, ec)) return;
  ZDP_CHECK(fs::is_directory(out_dir, ec) && fs::is_empty(out_dir, ec), ConfigError,
            "[ckpt {}] {} already exists and is not an empty directory: choose a new output path", what, out_dir);
}

// An output directory built under OUT.tmp and renamed to OUT only when
// complete: a tool that fails part-way (a damaged shard, a full disk) leaves
// neither OUT nor OUT.tmp behind.
class StagedOutput {
 public:
  StagedOutput(std::string out_dir, const char* what) : out_(std::move(out_dir)), tmp_(out_ + ".tmp") {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
    fs::create_directories(tmp_, ec);
    ZDP_CHECK(!ec, IoError, "[ckpt {}] cannot create {} ({})", what, tmp_, ec.message());
  }
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;
  ~StagedOutput() {
    std::error_code ec;
    if (!committed_) fs::remove_all(tmp_, ec);
  }
  const std::string& dir() const { return tmp_; }
  void commit() {
    sync_directory(tmp_);
    std::error_code ec;
    if (fs::exists(out_, ec)) fs::remove(out_, ec);  // an empty directory (check_fresh_output)
    rename_path(tmp_, out_);
    sync_directory(parent_path(fs::absolute(out_).string()));
    committed_ = true;
  }

 private:
  std::string out_, tmp_;
  bool committed_ = false;
};

std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Maps a flat element offset to its unit, so that an export piece (one
// layer's tensor, or wte) is served from one unit's records.
class UnitIndex {
 public:
  explicit UnitIndex(const std::vector<size_t>& counts) : begins_(counts.size() + 1, 0) {
    for (size_t u = 0; u < counts.size(); ++u) begins_[u + 1] = begins_[u] + counts[u];
  }
  void read(CheckpointReader& reader, size_t tensor, size_t offset, std::span<float> out) const {
    // The unit whose range [begin, end) holds `offset`: the last begin <= offset.
    const auto it = std::upper_bound(begins_.begin(), begins_.end(), offset);
    const size_t unit = static_cast<size_t>(it - begins_.begin()) - 1;
    ZDP_CHECK(it != begins_.end() && offset + out.size() <= begins_[unit + 1], Error,
              "[ckpt consolidate] export piece [{}, {}) crosses a unit boundary or reaches past Φ = {} (internal: "
              "the export tensors no longer match the model's units; please report)",
              offset, offset + out.size(), begins_.back());
    reader.read(unit, tensor, {offset - begins_[unit], out.size()}, out);
  }

 private:
  std::vector<size_t> begins_;  // begins_[u]: flat offset of unit u; back() is Φ
};

}  // namespace

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
  manifest_model_config(report.manifest, join_path(report.path, kManifestName));
  CheckpointReader reader(report.path, report.manifest);
  for (int r = 0; r < report.manifest.ranks; ++r) report.files.push_back(reader.verify_file(r));
  return report;
}

std::vector<float> read_full_tensor(CheckpointReader& reader, size_t tensor) {
  const Manifest& m = reader.manifest();
  std::vector<float> full(m.num_params);
  size_t at = 0;
  for (size_t u = 0; u < m.units.size(); ++u) {
    const size_t count = m.units[u].count;
    reader.read(u, tensor, {0, count}, std::span<float>(full).subspan(at, count));
    at += count;
  }
  return full;
}

ConsolidateResult consolidate(const std::string& checkpoint, const std::string& out_dir,
                              const ConsolidateOptions& options) {
  ConsolidateResult result;
  result.rss_before_bytes = current_rss_bytes();
  result.checkpoint = resolve_checkpoint(checkpoint);
  check_fresh_output(out_dir, "consolidate");
  const Manifest manifest = read_manifest(result.checkpoint);
  const std::string manifest_path = join_path(result.checkpoint, kManifestName);
  const model::ModelConfig config = manifest_model_config(manifest, manifest_path);
  const std::vector<ExportTensor> tensors = export_tensors(config);

  StagedOutput staged(without_trailing_slashes(out_dir), "consolidate");
  const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                       {"source", "zerodp checkpoint"},
                                                       {"step", std::to_string(manifest.steps)},
                                                       {"model", manifest.model_json}};

  CheckpointReader reader(result.checkpoint, manifest);
  const UnitIndex units(manifest.unit_counts());
  for (size_t t = 0; t < manifest.tensors.size(); ++t) {
    if (t > 0 && !options.optimizer_states) break;
    // Each file is its own pass over the shards: reading twice costs time,
    // holding a tensor between the two would cost memory.
    const PieceReader read = [&](size_t offset, std::span<float> out) { units.read(reader, t, offset, out); };
    const std::string& name = manifest.tensors[t];
    const std::string file = t == 0 ? "model.safetensors" : name + ".safetensors";
    const uint64_t buffer = write_safetensors(join_path(staged.dir(), file), tensors, read, metadata);
    result.stream_buffer_bytes = std::max(result.stream_buffer_bytes, buffer);
    result.files.push_back(join_path(out_dir, file));
    if (t == 0 && options.llmc && config.kind == model::ModelKind::kGpt) {
      const uint64_t llmc = write_llmc_model(join_path(staged.dir(), "model.bin"), config.gpt, tensors, read);
      result.stream_buffer_bytes = std::max(result.stream_buffer_bytes, llmc);
      result.files.push_back(join_path(out_dir, "model.bin"));
    }
    if (t == 0 && options.hf && config.kind == model::ModelKind::kGpt) {
      const std::string hf = join_path(staged.dir(), "hf");
      std::error_code ec;
      std::filesystem::create_directory(hf, ec);
      ZDP_CHECK(!ec, IoError, "[ckpt consolidate] cannot create {} ({})", hf, ec.message());
      const uint64_t buffers = write_hf_gpt2(hf, config.gpt, read);
      result.stream_buffer_bytes = std::max(result.stream_buffer_bytes, buffers);
      sync_directory(hf);
      result.files.push_back(join_path(out_dir, std::string("hf/") + kHfWeightsName));
      result.files.push_back(join_path(out_dir, std::string("hf/") + kHfConfigName));
    }
  }
  staged.commit();
  result.peak_rss_bytes = peak_rss_bytes();
  return result;
}

ReshardResult reshard(const std::string& checkpoint, const std::string& out_path, const ReshardOptions& options) {
  const std::string out_dir = without_trailing_slashes(out_path);
  ZDP_CHECK(options.ranks >= 1 && options.ranks <= (1 << 20), ConfigError,
            "[ckpt reshard] --ranks {} must be at least 1", options.ranks);
  const std::string src = resolve_checkpoint(checkpoint);
  check_fresh_output(out_dir, "reshard");
  Manifest in = read_manifest(src);
  manifest_model_config(in, join_path(src, kManifestName));
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
  std::vector<float> buffer;
  for (int r = 0; r < out.ranks; ++r) {
    const ShardLayout layout(counts, out.ranks, r, out.tensors.size(), out.chunk_bytes);
    const FileHeader header{kFormatVersion,
                            static_cast<uint32_t>(r),
                            static_cast<uint32_t>(out.ranks),
                            static_cast<uint32_t>(counts.size()),
                            static_cast<uint32_t>(out.tensors.size()),
                            out.chunk_bytes,
                            out.save_id};
    const std::string name = shard_file_name(r, out.ranks);
    ShardWriter writer(join_path(tmp, name + ".tmp"), header, layout);
    for (size_t u = 0; u < counts.size(); ++u) {
      const comm::ShardRange range = layout.range(u);
      buffer.resize(range.count);
      result.largest_record_bytes = std::max<uint64_t>(result.largest_record_bytes, 4ull * range.count);
      for (size_t t = 0; t < out.tensors.size(); ++t) {
        reader.read(u, t, range, buffer);
        writer.write_record(u, t, buffer);
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
