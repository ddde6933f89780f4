#include "ckpt/export_format.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ckpt/file_io.h"
#include "core/error.h"
#include "model/gpt_config.h"
#include "model/llmc_io.h"
#include "model/mlp.h"

namespace zerodp::ckpt {
namespace {

std::vector<ExportTensor> gpt_tensors(const model::GptConfig& g) {
  const size_t C = static_cast<size_t>(g.channels);
  const size_t L = static_cast<size_t>(g.layers);
  const size_t Vp = static_cast<size_t>(g.padded_vocab);
  const size_t T = static_cast<size_t>(g.max_seq_len);
  const int64_t Ci = g.channels, Li = g.layers;
  const model::BlockLayout b = model::block_layout(g.channels);
  const size_t embedding = model::embedding_unit_params(g);
  std::vector<ExportTensor> out;
  out.push_back({"wte", {g.padded_vocab, Ci}, {{0, Vp * C}}});
  out.push_back({"wpe", {g.max_seq_len, Ci}, {{Vp * C, T * C}}});
  // Per-layer tensors, stacked: piece l lies in block l's unit.
  auto stacked = [&](const char* name, size_t offset, size_t count, std::vector<int64_t> shape) {
    ExportTensor t{name, std::move(shape), {}};
    for (size_t l = 0; l < L; ++l) t.pieces.push_back({embedding + l * b.count + offset, count});
    out.push_back(std::move(t));
  };
  stacked("ln1w", b.ln1w, C, {Li, Ci});
  stacked("ln1b", b.ln1b, C, {Li, Ci});
  stacked("qkvw", b.qkvw, 3 * C * C, {Li, 3 * Ci, Ci});
  stacked("qkvb", b.qkvb, 3 * C, {Li, 3 * Ci});
  stacked("attprojw", b.attprojw, C * C, {Li, Ci, Ci});
  stacked("attprojb", b.attprojb, C, {Li, Ci});
  stacked("ln2w", b.ln2w, C, {Li, Ci});
  stacked("ln2b", b.ln2b, C, {Li, Ci});
  stacked("fcw", b.fcw, 4 * C * C, {Li, 4 * Ci, Ci});
  stacked("fcb", b.fcb, 4 * C, {Li, 4 * Ci});
  stacked("fcprojw", b.fcprojw, 4 * C * C, {Li, Ci, 4 * Ci});
  stacked("fcprojb", b.fcprojb, C, {Li, Ci});
  const size_t lnf = embedding + L * b.count;
  out.push_back({"lnfw", {Ci}, {{lnf, C}}});
  out.push_back({"lnfb", {Ci}, {{lnf + C, C}}});
  return out;
}

std::vector<ExportTensor> mlp_tensors(const model::MlpConfig& m) {
  std::vector<ExportTensor> out;
  size_t at = 0;
  for (size_t l = 0; l + 1 < m.widths.size(); ++l) {
    const int64_t in = m.widths[l], outw = m.widths[l + 1];
    const size_t w = static_cast<size_t>(in * outw);
    out.push_back({"fc" + std::to_string(l) + ".weight", {outw, in}, {{at, w}}});
    out.push_back({"fc" + std::to_string(l) + ".bias", {outw}, {{at + w, static_cast<size_t>(outw)}}});
    at += w + static_cast<size_t>(outw);
  }
  return out;
}

// Every piece of every tensor in order, each read into `buffer` (reserved
// once at the largest piece, so it is allocated once) and appended.
// Each piece streams through one buffer of at most kSliceElements, so a
// vocabulary-sized tensor never needs a buffer of its own size.
constexpr size_t kSliceElements = size_t{1} << 20;  // 4 MiB

void write_pieces(File& f, std::span<const ExportTensor> tensors, const PieceReader& read,
                  std::vector<float>& buffer) {
  for (const auto& t : tensors) {
    for (const auto& p : t.pieces) {
      for (size_t at = 0; at < p.count; at += buffer.size()) {
        buffer.resize(std::min(kSliceElements, p.count - at));
        read(p.offset + at, buffer);
        f.append(std::as_bytes(std::span<const float>(buffer)));
      }
    }
  }
}

PieceReader flat_reader(std::span<const float> flat) {
  return [flat](size_t offset, std::span<float> out) {
    ZDP_CHECK(offset <= flat.size() && out.size() <= flat.size() - offset, ShapeError,
              "[ckpt export] piece [{}, {}) reaches past Φ = {}", offset, offset + out.size(), flat.size());
    std::copy_n(flat.begin() + static_cast<std::ptrdiff_t>(offset), out.size(), out.begin());
  };
}

}  // namespace

size_t ExportTensor::count() const {
  size_t n = 0;
  for (const auto& p : pieces) n += p.count;
  return n;
}

std::vector<ExportTensor> export_tensors(const model::ModelConfig& config) {
  return config.kind == model::ModelKind::kGpt ? gpt_tensors(config.gpt) : mlp_tensors(config.mlp);
}

size_t largest_piece(std::span<const ExportTensor> tensors) {
  size_t n = 0;
  for (const auto& t : tensors) {
    for (const auto& p : t.pieces) n = std::max(n, p.count);
  }
  return n;
}

uint64_t write_safetensors(const std::string& path, std::span<const ExportTensor> tensors, const PieceReader& read,
                           const std::map<std::string, std::string>& metadata, const std::string& prefix) {
  nlohmann::ordered_json header;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  header["__metadata__"] = meta;
  uint64_t at = 0;
  for (const auto& t : tensors) {
    const uint64_t bytes = 4ull * t.count();
    header[prefix + t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  const uint64_t length = text.size();
  std::array<std::byte, 8> len{};
  std::memcpy(len.data(), &length, 8);

  std::vector<float> buffer;
  buffer.reserve(std::min(kSliceElements, largest_piece(tensors)));
  File f(path, File::Mode::kCreate);
  f.append(len);
  f.append(std::as_bytes(std::span(text.data(), text.size())));
  write_pieces(f, tensors, read, buffer);
  f.sync();
  f.close();
  return 4ull * buffer.capacity();
}

uint64_t write_llmc_model(const std::string& path, const model::GptConfig& c, std::span<const ExportTensor> tensors,
                          const PieceReader& read) {
  const std::array<int32_t, 256> h = model::llmc_model_header(c);
  std::vector<float> buffer;
  buffer.reserve(std::min(kSliceElements, largest_piece(tensors)));
  File f(path, File::Mode::kCreate);
  f.append(std::as_bytes(std::span(h)));
  write_pieces(f, tensors, read, buffer);
  f.sync();
  f.close();
  return 4ull * buffer.capacity();
}

uint64_t write_safetensors(const std::string& path, std::span<const ExportTensor> tensors,
                           std::span<const float> flat, const std::map<std::string, std::string>& metadata,
                           const std::string& prefix) {
  return write_safetensors(path, tensors, flat_reader(flat), metadata, prefix);
}

uint64_t write_llmc_model(const std::string& path, const model::GptConfig& c, std::span<const ExportTensor> tensors,
                          std::span<const float> flat) {
  return write_llmc_model(path, c, tensors, flat_reader(flat));
}

}  // namespace zerodp::ckpt
