// SPDX-License-Identifier: Apache-2.0
#include "weights/export_format.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ckpt/file_io.h"
#include "core/convert.h"
#include "core/error.h"
#include "model/gpt_config.h"
#include "model/gpt_family.h"
#include "model/llmc_io.h"
#include "model/mlp_family.h"

namespace zerodp::weights {

using ckpt::File;
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

// Every piece of every tensor in order, streamed through `buffer` (at most
// `slice` elements, allocated once) and written at its place: `at` is the
// file offset of the first piece. A piece larger than the slice goes through
// it in slices, so a vocabulary-sized tensor never needs a buffer of its own
// size. A transposed piece ([R, K] in the flat buffer, [K, R] in the file) is
// read a block of whole rows at a time; column k of the block is a run of
// the file's row k, gathered into `run` and written where it belongs.
struct Buffers {
  std::vector<float> block, run;
  std::vector<std::byte> narrow;  // block or run converted, for a BF16/F16 file
};

// Writes `values` at `offset` as `dtype`'s elements (converted through
// b.narrow when the file is not fp32).
void write_values(File& f, uint64_t offset, std::span<const float> values, Dtype dtype, Buffers& b) {
  if (dtype == Dtype::fp32()) {
    f.write_at(offset, std::as_bytes(values));
    return;
  }
  b.narrow.resize(values.size() * dtype.size());
  convert(values.data(), Dtype::fp32(), b.narrow.data(), dtype, values.size());
  f.write_at(offset, b.narrow);
}

size_t rows_per_block(const ExportTensor::Piece& p, size_t slice) {
  const size_t cols = p.count / p.rows;
  return std::min(p.rows, std::max<size_t>(1, slice / cols));
}

Buffers reserve_buffers(std::span<const ExportTensor> tensors, size_t slice, Dtype dtype = Dtype::fp32()) {
  size_t block = 0, run = 0;
  for (const auto& t : tensors) {
    for (const auto& p : t.pieces) {
      if (p.rows == 0) {
        block = std::max(block, std::min(slice, p.count));
      } else {
        ZDP_CHECK(p.count % p.rows == 0, Error, "[ckpt export] {}: a transposed piece of {} elements has {} rows",
                  t.name, p.count, p.rows);
        const size_t rows = rows_per_block(p, slice);
        block = std::max(block, rows * (p.count / p.rows));
        run = std::max(run, rows);
      }
    }
  }
  Buffers b;
  b.block.reserve(block);
  b.run.reserve(run);
  if (dtype != Dtype::fp32()) b.narrow.reserve(std::max(block, run) * dtype.size());
  return b;
}

void write_pieces(File& f, uint64_t at, std::span<const ExportTensor> tensors, const PieceReader& read, size_t slice,
                  Buffers& b, Dtype dtype = Dtype::fp32()) {
  const uint64_t e = dtype.size();
  for (const auto& t : tensors) {
    for (const auto& p : t.pieces) {
      if (p.rows == 0) {
        for (size_t done = 0; done < p.count; done += b.block.size()) {
          b.block.resize(std::min(slice, p.count - done));
          read(p.offset + done, b.block);
          write_values(f, at + e * done, b.block, dtype, b);
        }
      } else {
        const size_t R = p.rows, K = p.count / p.rows, step = rows_per_block(p, slice);
        for (size_t r0 = 0; r0 < R; r0 += step) {
          const size_t nr = std::min(step, R - r0);
          b.block.resize(nr * K);
          read(p.offset + r0 * K, b.block);
          b.run.resize(nr);
          for (size_t k = 0; k < K; ++k) {
            for (size_t r = 0; r < nr; ++r) b.run[r] = b.block[r * K + k];
            write_values(f, at + e * (k * R + r0), b.run, dtype, b);
          }
        }
      }
      at += e * uint64_t{p.count};
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

namespace {

// Any other family's tensors as its Model::tensors() names and lays them
// out: one piece each, row-major as they lie in the flat buffer.
std::vector<ExportTensor> model_tensors(const model::ModelConfig& config) {
  std::vector<ExportTensor> out;
  for (const model::TensorInfo& t : model::make_model(config)->tensors()) {
    out.push_back({t.name, std::vector<int64_t>(t.shape.begin(), t.shape.end()), {{t.offset, t.count}}});
  }
  return out;
}

}  // namespace

std::vector<ExportTensor> export_tensors(const model::ModelConfig& config) {
  if (const auto* gpt = config.as<model::GptSpec>()) return gpt_tensors(gpt->config());
  if (const auto* mlp = config.as<model::MlpSpec>()) return mlp_tensors(mlp->config());
  return model_tensors(config);
}

size_t largest_piece(std::span<const ExportTensor> tensors) {
  size_t n = 0;
  for (const auto& t : tensors) {
    for (const auto& p : t.pieces) n = std::max(n, p.count);
  }
  return n;
}

uint64_t write_safetensors(const std::string& path, std::span<const ExportTensor> tensors, const PieceReader& read,
                           const std::map<std::string, std::string>& metadata, const std::string& prefix,
                           size_t slice_elements, Dtype dtype) {
  nlohmann::ordered_json header;
  nlohmann::ordered_json meta = nlohmann::ordered_json::object();
  for (const auto& [k, v] : metadata) meta[k] = v;
  header["__metadata__"] = meta;
  uint64_t at = 0;
  for (const auto& t : tensors) {
    const uint64_t bytes = dtype.size() * t.count();
    header[prefix + t.name] = {
        {"dtype", safetensors_dtype_name(dtype)}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  const uint64_t length = text.size();
  std::array<std::byte, 8> len{};
  std::memcpy(len.data(), &length, 8);

  Buffers buffers = reserve_buffers(tensors, slice_elements, dtype);
  File f(path, File::Mode::kCreate);
  f.append(len);
  f.append(std::as_bytes(std::span(text.data(), text.size())));
  write_pieces(f, 8 + length, tensors, read, slice_elements, buffers, dtype);
  f.sync();
  f.close();
  return 4ull * (buffers.block.capacity() + buffers.run.capacity()) + buffers.narrow.capacity();
}

const char* safetensors_dtype_name(Dtype dtype) {
  switch (dtype.kind()) {
    case Dtype::Kind::kFp32:
      return "F32";
    case Dtype::Kind::kBf16:
      return "BF16";
    case Dtype::Kind::kFp16:
      return "F16";
  }
  return "F32";
}

uint64_t write_llmc_model(const std::string& path, const model::GptConfig& c, std::span<const ExportTensor> tensors,
                          const PieceReader& read) {
  const std::array<int32_t, 256> h = model::llmc_model_header(c);
  Buffers buffers = reserve_buffers(tensors, kExportSliceElements);
  File f(path, File::Mode::kCreate);
  f.append(std::as_bytes(std::span(h)));
  write_pieces(f, sizeof(h), tensors, read, kExportSliceElements, buffers);
  f.sync();
  f.close();
  return 4ull * (buffers.block.capacity() + buffers.run.capacity());
}

uint64_t write_safetensors(const std::string& path, std::span<const ExportTensor> tensors, std::span<const float> flat,
                           const std::map<std::string, std::string>& metadata, const std::string& prefix,
                           size_t slice_elements) {
  return write_safetensors(path, tensors, flat_reader(flat), metadata, prefix, slice_elements);
}

uint64_t write_llmc_model(const std::string& path, const model::GptConfig& c, std::span<const ExportTensor> tensors,
                          std::span<const float> flat) {
  return write_llmc_model(path, c, tensors, flat_reader(flat));
}

}  // namespace zerodp::weights
