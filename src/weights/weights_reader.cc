// SPDX-License-Identifier: Apache-2.0
#include "weights/weights_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include "ckpt/file_io.h"
#include "core/convert.h"
#include "core/error.h"
#include "model/gpt_family.h"
#include "model/llmc_io.h"
#include "model/presets.h"
#include "weights/export_format.h"
#include "weights/hf_checkpoint.h"
#include "weights/hf_format.h"
#include "weights/model_record.h"
#include "weights/safetensors_reader.h"

namespace zerodp::weights {

using ckpt::File;
using ckpt::join_path;
using ckpt::parent_path;
namespace {

constexpr size_t kCacheElements = size_t{1} << 18;  // 1 MiB of rows of a transposed matrix

// One export piece as it lies in its file: `count` flat elements at `flat`,
// stored from byte `at` of file `file` in `dtype` as they are (rows == 0) or
// transposed (a [rows, K] matrix in the flat buffer stored as [K, rows]).
struct FilePiece {
  size_t flat = 0, count = 0, rows = 0;
  uint64_t at = 0;
  size_t file = 0;
  Dtype dtype = Dtype::fp32();
};

// Reads flat ranges of safetensors files through their export pieces,
// widening BF16 and F16 values exactly; flat elements no piece covers
// (wte's padded rows in an HF file) are zeros.
class PieceFileReader {
 public:
  PieceFileReader(const std::vector<std::string>& paths, std::vector<FilePiece> pieces, size_t num_params)
      : pieces_(std::move(pieces)), n_(num_params) {
    for (const std::string& p : paths) files_.emplace_back(p, File::Mode::kRead);
    std::sort(pieces_.begin(), pieces_.end(), [](const FilePiece& a, const FilePiece& b) { return a.flat < b.flat; });
    for (const FilePiece& p : pieces_) {
      const size_t elem = p.dtype == Dtype::fp32() ? 0 : p.dtype.size();  // F32 reads in place
      if (p.rows == 0) {
        most_raw_ = std::max(most_raw_, std::min(p.count, kCacheElements) * elem);
        continue;
      }
      const size_t nrows = cache_rows(p, 0);
      most_cache_ = std::max(most_cache_, nrows * (p.count / p.rows));
      most_run_ = std::max(most_run_, nrows);
      most_raw_ = std::max(most_raw_, nrows * elem);
    }
  }

  // The cache and the file run of fill_cache and the raw bytes of a 16-bit
  // read, each at its largest over the pieces (reserved at the first read, so
  // never more).
  uint64_t scratch_bytes() const { return sizeof(float) * (most_cache_ + most_run_) + most_raw_; }

  const std::string& path() const { return files_.front().path(); }

  void read(size_t first, std::span<float> out) {
    ZDP_CHECK(first <= n_ && out.size() <= n_ - first, ShapeError,
              "[load] {}: elements [{}, {}) lie past its {} parameters", path(), first, first + out.size(), n_);
    size_t done = 0;
    while (done < out.size()) {
      const size_t at = first + done;
      // The first piece ending after `at`.
      auto it = std::upper_bound(pieces_.begin(), pieces_.end(), at,
                                 [](size_t x, const FilePiece& p) { return x < p.flat + p.count; });
      const size_t gap_end = it == pieces_.end() ? n_ : it->flat;
      std::span<float> rest = out.subspan(done);
      if (at < gap_end) {  // no piece here: zeros
        const size_t n = std::min(rest.size(), gap_end - at);
        std::fill_n(rest.begin(), n, 0.0f);
        done += n;
        continue;
      }
      const size_t n = std::min(rest.size(), it->flat + it->count - at);
      if (it->rows == 0) {
        read_plain(*it, at - it->flat, rest.first(n));
      } else {
        read_transposed(*it, at - it->flat, rest.first(n));
      }
      done += n;
    }
  }

 private:
  // Elements [skip, skip + out.size()) of a transposed piece, from cached
  // blocks of whole flat rows; a block is read as one run per file row.
  void read_transposed(const FilePiece& p, size_t skip, std::span<float> out) {
    const size_t K = p.count / p.rows;
    size_t done = 0;
    while (done < out.size()) {
      const size_t row = (skip + done) / K;
      if (cached_ != &p || row < row0_ || row >= row0_ + nrows_) fill_cache(p, row);
      const size_t from = skip + done - row0_ * K;
      const size_t n = std::min(out.size() - done, nrows_ * K - from);
      std::copy_n(cache_.begin() + static_cast<std::ptrdiff_t>(from), n,
                  out.begin() + static_cast<std::ptrdiff_t>(done));
      done += n;
    }
  }

  // Rows of a cache block from `row` on: a block of about kCacheElements.
  static size_t cache_rows(const FilePiece& p, size_t row) {
    return std::min(p.rows - row, std::max<size_t>(1, kCacheElements / (p.count / p.rows)));
  }

  // Elements [skip, skip + out.size()) of a piece stored as it is.
  void read_plain(const FilePiece& p, size_t skip, std::span<float> out) {
    const uint64_t from = p.at + uint64_t{p.dtype.size()} * skip;
    if (p.dtype == Dtype::fp32()) {
      files_[p.file].read_at(from, std::as_writable_bytes(out));
      return;
    }
    raw_.reserve(most_raw_);
    for (size_t done = 0; done < out.size(); done += kCacheElements) {
      const size_t n = std::min(kCacheElements, out.size() - done);
      raw_.resize(n * p.dtype.size());
      files_[p.file].read_at(from + uint64_t{p.dtype.size()} * done, raw_);
      convert(raw_.data(), p.dtype, out.data() + done, Dtype::fp32(), n);
    }
  }

  void fill_cache(const FilePiece& p, size_t row) {
    const size_t K = p.count / p.rows;
    cache_.reserve(most_cache_);
    run_.reserve(most_run_);
    raw_.reserve(most_raw_);
    row0_ = row;
    nrows_ = cache_rows(p, row);
    cache_.resize(nrows_ * K);
    run_.resize(nrows_);
    for (size_t k = 0; k < K; ++k) {
      const uint64_t from = p.at + uint64_t{p.dtype.size()} * (k * p.rows + row0_);
      if (p.dtype == Dtype::fp32()) {
        files_[p.file].read_at(from, std::as_writable_bytes(std::span<float>(run_)));
      } else {
        raw_.resize(nrows_ * p.dtype.size());
        files_[p.file].read_at(from, raw_);
        convert(raw_.data(), p.dtype, run_.data(), Dtype::fp32(), nrows_);
      }
      for (size_t r = 0; r < nrows_; ++r) cache_[r * K + k] = run_[r];
    }
    cached_ = &p;
  }

  std::vector<File> files_;
  std::vector<FilePiece> pieces_;
  size_t n_;
  std::vector<float> cache_, run_;
  std::vector<std::byte> raw_;
  size_t most_cache_ = 0, most_run_ = 0, most_raw_ = 0;
  const FilePiece* cached_ = nullptr;
  size_t row0_ = 0, nrows_ = 0;
};

bool has(const SafetensorsHeader& h, const std::string& name) { return h.tensors.count(name) != 0; }

// The [rows, cols] of a 2-D tensor (InputFileError otherwise).
std::array<int, 2> matrix_shape(const SafetensorsHeader& h, const std::string& name) {
  ZDP_CHECK(has(h, name), InputFileError, "[load] {}: has no tensor \"{}\"", h.path, name);
  const auto& shape = h.tensors.at(name).shape;
  ZDP_CHECK(shape.size() == 2 && shape[0] >= 1 && shape[1] >= 1 && shape[0] < (1 << 30) && shape[1] < (1 << 30),
            InputFileError, "[load] {}: tensor \"{}\" is {}, not a matrix", h.path, name, shape_text(shape));
  return {static_cast<int>(shape[0]), static_cast<int>(shape[1])};
}

// Each export tensor of `held` must be in the files, F32, BF16 or F16, with
// its shape; its pieces then lie one after another from its first byte.
std::vector<FilePiece> file_pieces(const HfFiles& files, const std::vector<ExportTensor>& tensors,
                                   const model::GptConfig& held, const char* format) {
  std::vector<FilePiece> pieces;
  for (const ExportTensor& t : tensors) {
    ZDP_CHECK(files.has(t.name), InputFileError, "[load] {}: has no tensor \"{}\", which a {} of a {} has", files.where,
              t.name, format, held.describe());
    const size_t file = files.file_of.at(t.name);
    const SafetensorsEntry& e = files.entry(t.name);
    const std::string& path = files.headers[file].path;
    const Dtype dtype = hf_tensor_dtype(e, t.name, path);
    ZDP_CHECK(e.shape == t.shape, InputFileError, "[load] {}: tensor \"{}\" is {}, but a {} of a {} has {}", path,
              t.name, shape_text(e.shape), format, held.describe(), shape_text(t.shape));
    uint64_t at = e.begin;
    for (const auto& p : t.pieces) {
      pieces.push_back({p.offset, p.count, p.rows, at, file, dtype});
      at += uint64_t{dtype.size()} * p.count;
    }
  }
  return pieces;
}

// Every file's tensors as one header (named by the checkpoint's path), for
// the checks of names and shapes.
SafetensorsHeader merged_header(const HfFiles& files) {
  SafetensorsHeader all;
  all.path = files.headers.size() == 1 ? files.headers.front().path : files.where;
  all.metadata = files.headers.front().metadata;
  for (const SafetensorsHeader& h : files.headers) all.tensors.insert(h.tensors.begin(), h.tensors.end());
  return all;
}

std::vector<std::string> paths_of(const HfFiles& files) {
  std::vector<std::string> paths;
  for (const SafetensorsHeader& h : files.headers) paths.push_back(h.path);
  return paths;
}

// Layers of an HF file: h.0, h.1, ... while ln_1.weight is there.
int hf_layers(const SafetensorsHeader& h, const std::string& prefix) {
  int l = 0;
  while (has(h, fmt::format("{}h.{}.ln_1.weight", prefix, l))) ++l;
  ZDP_CHECK(l >= 1, InputFileError, "[load] {}: has no layer tensors ({}h.0.ln_1.weight, ...)", h.path, prefix);
  return l;
}

}  // namespace

const char* weights_format_name(WeightsFormat format) {
  switch (format) {
    case WeightsFormat::kLlmc:
      return "llm.c model file";
    case WeightsFormat::kZerodpSafetensors:
      return "zerodp safetensors";
    case WeightsFormat::kHfSafetensors:
      return "Hugging Face GPT-2 safetensors";
  }
  return "?";
}

struct GptWeightsReader::Impl {
  WeightsFormat format = WeightsFormat::kLlmc;
  model::GptConfig config;
  std::string note;  // what the description adds: "with config.json", ...
  std::optional<model::LlmcModelReader> llmc;
  std::optional<PieceFileReader> pieces;

  // zerodp's names: the model JSON of the metadata, else the shapes.
  void open_zerodp(const HfFiles& files, const model::GptConfig& expected) {
    const SafetensorsHeader h = merged_header(files);
    format = WeightsFormat::kZerodpSafetensors;
    const auto meta = h.metadata.find("model");
    if (meta != h.metadata.end()) {
      model::ModelConfig mc;
      try {
        mc = model::model_config_from_json(meta->second);
      } catch (const ConfigError& e) {
        ZDP_THROW(InputFileError, "[load] {}: its metadata's model is not one zerodp reads: {}", h.path, e.message());
      }
      const auto* gpt = mc.as<model::GptSpec>();
      ZDP_CHECK(gpt != nullptr, InputFileError, "[load] {}: holds a \"{}\" model, not a GPT", h.path, mc.kind());
      config = gpt->config();
    } else {
      const auto wte = matrix_shape(h, "wte"), wpe = matrix_shape(h, "wpe");
      ZDP_CHECK(has(h, "ln1w"), InputFileError, "[load] {}: has no tensor \"ln1w\"", h.path);
      const auto& ln1w = h.tensors.at("ln1w").shape;
      ZDP_CHECK(ln1w.size() == 2 && ln1w[0] >= 1 && ln1w[0] < (1 << 20), InputFileError,
                "[load] {}: tensor \"ln1w\" is {}, not [layers, channels]", h.path, shape_text(ln1w));
      config = {wpe[0],         expected.padded_vocab == wte[0] ? expected.vocab : wte[0],
                wte[0],         static_cast<int>(ln1w[0]),
                expected.heads, wte[1]};
      note = "without zerodp's metadata: vocabulary and heads as --model's";
    }
    validate_held(h.path);
    const model::ModelConfig mc = model::gpt_model_config("file", config);
    pieces.emplace(paths_of(files), file_pieces(files, export_tensors(mc), config, weights_format_name(format)),
                   model::gpt_num_params(config));
  }

  // HF names: the shapes, cross-checked with config.json when it is there.
  void open_hf(const HfFiles& files, const std::string& path, const std::string& prefix,
               const model::GptConfig& expected) {
    format = WeightsFormat::kHfSafetensors;
    const SafetensorsHeader h = merged_header(files);
    const auto wte = matrix_shape(h, prefix + "wte.weight");
    const auto wpe = matrix_shape(h, prefix + "wpe.weight");
    const int layers = hf_layers(h, prefix);
    config = {wpe[0], wte[0], 0, layers, expected.heads, wte[1]};
    config.padded_vocab = expected.vocab == config.vocab && expected.padded_vocab >= config.vocab
                              ? expected.padded_vocab
                              : model::padded_vocab_for(config.vocab);
    const std::string json = hf_config_path(path);
    std::error_code ec;
    if (std::filesystem::exists(json, ec)) {
      const HfGpt2Config c = read_hf_gpt2_config(json);
      auto agree = [&](const char* key, int says, int tensors, const char* tensor) {
        ZDP_CHECK(says == tensors, InputFileError, "[load] {}: \"{}\" is {} but {}'s {} says {}", json, key, says,
                  h.path, tensor, tensors);
      };
      agree("n_embd", c.channels, config.channels, "wte.weight");
      agree("vocab_size", c.vocab, config.vocab, "wte.weight");
      agree("n_positions", c.positions, config.max_seq_len, "wpe.weight");
      agree("n_layer", c.layers, config.layers, "layer count");
      config.heads = c.heads;
      note = "with config.json";
    } else {
      note = "without config.json: heads as --model's";
    }
    validate_held(h.path);
    pieces.emplace(paths_of(files),
                   file_pieces(files, hf_gpt2_tensors(config, prefix), config, weights_format_name(format)),
                   model::gpt_num_params(config));
  }

  // zerodp's names or Hugging Face GPT-2's, told by the tensors present.
  void open_files(const HfFiles& files, const std::string& path, const model::GptConfig& expected) {
    const auto has_tensor = [&](const std::string& name) { return files.has(name); };
    if (has_tensor("wte") && has_tensor("qkvw") && has_tensor("ln1w")) {
      open_zerodp(files, expected);
    } else if (has_tensor(std::string(kHfPrefix) + "wte.weight")) {
      open_hf(files, path, kHfPrefix, expected);
    } else if (has_tensor("wte.weight")) {
      open_hf(files, path, "", expected);
    } else {
      ZDP_THROW(InputFileError,
                "[load] {}: a safetensors file without GPT weights zerodp knows (neither zerodp's wte, qkvw, ... nor "
                "Hugging Face GPT-2's transformer.wte.weight, ...; it has {} tensors{})",
                path, files.file_of.size(),
                files.file_of.empty() ? "" : ", e.g. \"" + files.file_of.begin()->first + "\"");
    }
  }

  void validate_held(const std::string& path) {
    try {
      config.validate();
    } catch (const ConfigError& e) {
      ZDP_THROW(InputFileError, "[load] {}: describes an invalid model: {}", path, e.message());
    }
  }
};

GptWeightsReader::GptWeightsReader(const std::string& path, const model::GptConfig& expected)
    : impl_(std::make_unique<Impl>()) {
  if (std::filesystem::is_directory(path)) {  // a Hugging Face checkpoint: config.json and its weights
    impl_->open_files(open_hf_files(path), path, expected);
  } else {
    std::array<unsigned char, 16> first{};
    uint64_t size = 0;
    {
      const File f(path, File::Mode::kRead);
      size = f.size();
      f.read_at(0, std::as_writable_bytes(std::span(first).first(std::min<size_t>(size, first.size()))));
    }
    int32_t magic = 0;
    std::memcpy(&magic, first.data(), 4);
    if (size >= 4 && magic == model::kLlmcModelMagic) {
      impl_->llmc.emplace(path);
      impl_->config = impl_->llmc->config();
    } else if (looks_like_safetensors(first.data(), std::min<size_t>(size, first.size()), size)) {
      impl_->open_files(open_hf_files(path), path, expected);
    } else {
      ZDP_THROW(InputFileError,
                "[load] {}: not a weights file zerodp reads: bad magic {} (an llm.c model file starts with {}) and no "
                "safetensors header",
                path, size >= 4 ? fmt::format("{}", magic) : "(the file is shorter than 4 bytes)",
                model::kLlmcModelMagic);
    }
  }
  const model::GptConfig& held = impl_->config;
  ZDP_CHECK(held == expected, ConfigError,
            "[init-from] {} ({}) holds a {}; this run trains a {}: pass the model it holds with --model '{}'", path,
            description(), held.describe(), expected.describe(),
            model::model_config_json(model::gpt_model_config("custom", held)));
}

GptWeightsReader::~GptWeightsReader() = default;

WeightsFormat GptWeightsReader::format() const { return impl_->format; }
const model::GptConfig& GptWeightsReader::config() const { return impl_->config; }

std::string GptWeightsReader::description() const {
  std::string d = weights_format_name(impl_->format);
  if (!impl_->note.empty()) d += ", " + impl_->note;
  return d;
}

uint64_t GptWeightsReader::scratch_bytes() const { return impl_->pieces ? impl_->pieces->scratch_bytes() : 0; }

void GptWeightsReader::read(size_t first, std::span<float> out) {
  if (impl_->llmc) {
    impl_->llmc->read(first, out);
  } else {
    impl_->pieces->read(first, out);
  }
}

}  // namespace zerodp::weights
