// SPDX-License-Identifier: Apache-2.0
#include "weights/consolidate.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "ckpt/checkpoint_dir.h"
#include "ckpt/file_io.h"
#include "ckpt/shard_reader.h"
#include "ckpt/staged_output.h"
#include "core/error.h"
#include "core/process_memory.h"
#include "model/gpt_family.h"
#include "model/llama_family.h"
#include "optim/quant8.h"
#include "weights/export_format.h"
#include "weights/hf_format.h"
#include "weights/llama_hf_writer.h"
#include "weights/model_record.h"

namespace zerodp::weights {
namespace {

using ckpt::check_fresh_output;
using ckpt::CheckpointReader;
using ckpt::join_path;
using ckpt::kManifestName;
using ckpt::Manifest;
using ckpt::read_manifest;
using ckpt::resolve_checkpoint;
using ckpt::StagedOutput;
using ckpt::sync_directory;
using ckpt::without_trailing_slashes;

// Maps a flat element offset to its unit, so that an export piece (one
// layer's tensor, or wte) is served from one unit's records.
class UnitIndex {
 public:
  explicit UnitIndex(const std::vector<size_t>& counts) : begins_(counts.size() + 1, 0) {
    for (size_t u = 0; u < counts.size(); ++u) begins_[u + 1] = begins_[u] + counts[u];
  }
  void read(CheckpointReader& reader, size_t tensor, size_t offset, std::span<float> out) const {
    const size_t unit = unit_of(offset, out.size());
    reader.read(unit, tensor, {offset - begins_[unit], out.size()}, out);
  }
  // A moment as AdamW keeps it (`plain`: exp_avg or exp_avg_sq, -1 when the
  // checkpoint has none), or 8-bit Adam's dequantized (`codes`, `scales`,
  // -1 when none): whichever the piece's unit holds (8-bit Adam keeps some
  // units' moments in fp32).
  void read_moment(CheckpointReader& reader, int plain, int codes, int scales, const optim::quant8::DynamicMap& map,
                   size_t offset, std::span<float> out) const {
    if (out.empty()) return;
    const size_t unit = unit_of(offset, out.size());
    if (plain >= 0 && reader.manifest().holds(unit, static_cast<size_t>(plain))) {
      reader.read(unit, static_cast<size_t>(plain), {offset - begins_[unit], out.size()}, out);
      return;
    }
    ZDP_CHECK(codes >= 0 && scales >= 0, InputFileError,
              "[ckpt consolidate] unit {} holds neither this moment nor its 8-bit codes and scales", unit);
    read_dequantized(reader, static_cast<size_t>(codes), static_cast<size_t>(scales), map, offset, out);
  }
  // 8-bit Adam's moment, dequantized as the optimizer does: code * its
  // block's absmax, from the codes tensor and the scales tensor.
  void read_dequantized(CheckpointReader& reader, size_t codes_tensor, size_t scales_tensor,
                        const optim::quant8::DynamicMap& map, size_t offset, std::span<float> out) const {
    if (out.empty()) return;
    const size_t unit = unit_of(offset, out.size());
    const size_t at = offset - begins_[unit];
    constexpr size_t kBlock = optim::quant8::kBlockSize;
    std::vector<uint8_t> codes(out.size());
    reader.read_bytes(unit, codes_tensor, {at, out.size()}, std::as_writable_bytes(std::span(codes)));
    const size_t first = at / kBlock, last = (at + out.size() - 1) / kBlock;
    std::vector<float> scales(last - first + 1);
    reader.read(unit, scales_tensor, {first, scales.size()}, scales);
    for (size_t i = 0; i < out.size(); ++i) out[i] = map.code[codes[i]] * scales[(at + i) / kBlock - first];
  }

 private:
  // The unit whose range [begin, end) holds `offset`: the last begin <= offset.
  size_t unit_of(size_t offset, size_t count) const {
    const auto it = std::upper_bound(begins_.begin(), begins_.end(), offset);
    const size_t unit = static_cast<size_t>(it - begins_.begin()) - 1;
    ZDP_CHECK(it != begins_.end() && offset + count <= begins_[unit + 1], Error,
              "[ckpt consolidate] export piece [{}, {}) crosses a unit boundary or reaches past Φ = {} (internal: "
              "the export tensors no longer match the model's units; please report)",
              offset, offset + count, begins_.back());
    return unit;
  }

  std::vector<size_t> begins_;  // begins_[u]: flat offset of unit u; back() is Φ
};

}  // namespace

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
  // The files: master, then each optimizer tensor once, 8-bit Adam's moments
  // under AdamW's names (no file for the codes or the scales).
  std::vector<std::string> files;
  for (const std::string& name : manifest.tensors) {
    if (name.ends_with("_absmax")) continue;
    const std::string base = name.ends_with("_q8") ? name.substr(0, name.size() - 3) : name;
    if (std::find(files.begin(), files.end(), base) == files.end()) files.push_back(base);
  }
  for (size_t t = 0; t < files.size(); ++t) {
    if (t > 0 && !options.optimizer_states) break;
    const std::string& name = files[t];
    const int plain = manifest.tensor_index(name);
    // Each file is its own pass over the shards: reading twice costs time,
    // holding a tensor between the two would cost memory.
    PieceReader read = [&](size_t offset, std::span<float> out) {
      units.read(reader, static_cast<size_t>(plain), offset, out);
    };
    const int codes = manifest.tensor_index(name + "_q8");
    if (codes >= 0) {
      // 8-bit Adam: the moment dequantized to fp32 from its codes and block
      // scales, or as it is in the units that keep fp32 moments.
      const int scales = manifest.tensor_index(name + "_absmax");
      ZDP_CHECK(scales >= 0, InputFileError, "[ckpt consolidate] {}: tensor {}_q8 has no {}_absmax", manifest_path,
                name, name);
      const optim::quant8::DynamicMap& map =
          name == "exp_avg" ? optim::quant8::signed_map() : optim::quant8::unsigned_map();
      read = [&, plain, codes, scales](size_t offset, std::span<float> out) {
        units.read_moment(reader, plain, codes, scales, map, offset, out);
      };
    }
    const std::string file = t == 0 ? "model.safetensors" : name + ".safetensors";
    const uint64_t buffer = write_safetensors(join_path(staged.dir(), file), tensors, read, metadata);
    result.stream_buffer_bytes = std::max(result.stream_buffer_bytes, buffer);
    result.files.push_back(join_path(out_dir, file));
    const auto* gpt = config.as<model::GptSpec>();  // GPT-2's own export formats
    if (t == 0 && options.llmc && gpt != nullptr) {
      const uint64_t llmc = write_llmc_model(join_path(staged.dir(), "model.bin"), gpt->config(), tensors, read);
      result.stream_buffer_bytes = std::max(result.stream_buffer_bytes, llmc);
      result.files.push_back(join_path(out_dir, "model.bin"));
    }
    const auto* llama = config.as<model::LlamaSpec>();  // the Llama family's Hugging Face layout
    if (t == 0 && options.hf && (gpt != nullptr || llama != nullptr)) {
      const std::string hf = join_path(staged.dir(), "hf");
      std::error_code ec;
      std::filesystem::create_directory(hf, ec);
      ZDP_CHECK(!ec, IoError, "[ckpt consolidate] cannot create {} ({})", hf, ec.message());
      std::vector<std::string> written;
      const HfWriteOptions hf_options = {.dtype = options.hf_dtype, .max_shard_bytes = options.hf_max_shard_bytes};
      const uint64_t buffers = gpt != nullptr ? write_hf_gpt2(hf, gpt->config(), read, hf_options, written)
                                              : write_hf_llama(hf, llama->config(), tensors, read, hf_options, written);
      result.stream_buffer_bytes = std::max(result.stream_buffer_bytes, buffers);
      sync_directory(hf);
      for (const std::string& name : written) result.files.push_back(join_path(out_dir, "hf/" + name));
    }
  }
  staged.commit();
  result.peak_rss_bytes = peak_rss_bytes();
  return result;
}

}  // namespace zerodp::weights
