// SPDX-License-Identifier: Apache-2.0
// Writing consolidated fp32 weights for other tools: the safetensors format
// (Hugging Face: u64 little-endian header length, a JSON header of
// {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}}
// padded with spaces to a multiple of 8, then the raw data) and llm.c's GPT-2
// model file (256 int32 header, then fp32 tensors in llm.c's order).
//
// Tensor names and shapes (export_tensors):
//   gpt: llm.c's tensors, stacked over layers as in its file: wte [Vp, C],
//        wpe [maxT, C], ln1w [L, C], ln1b [L, C], qkvw [L, 3C, C], qkvb [L, 3C],
//        attprojw [L, C, C], attprojb [L, C], ln2w [L, C], ln2b [L, C],
//        fcw [L, 4C, C], fcb [L, 4C], fcprojw [L, C, 4C], fcprojb [L, C],
//        lnfw [C], lnfb [C]  (so the safetensors data is the llm.c payload)
//   mlp: fc<l>.weight [out, in], fc<l>.bias [out]
// (Hugging Face GPT-2's names and layout: hf_format.h.)
// Each tensor is gathered from pieces of the flat parameter buffer. The
// writers stream: the header first (it needs only shapes), then piece by
// piece through one reusable buffer filled by a PieceReader, so their memory
// is the largest piece, never the model (a piece of a GPT is one layer's
// tensor, or wte). A piece may be written transposed (Hugging Face's Conv1D
// weights): it is read a block of whole rows at a time and each column of
// the block is written at its place in the file, so the bound is the same.
// A flat-span overload serves callers that hold the copy.
// Thread-safety: pure functions and file writes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "model/gpt_config.h"
#include "model/presets.h"

namespace zerodp::weights {

struct ExportTensor {
  std::string name;
  std::vector<int64_t> shape;
  struct Piece {
    size_t offset = 0;  // in the flat buffer
    size_t count = 0;
    // 0: written as it lies. R > 0: the piece is a row-major [R, count / R]
    // matrix in the flat buffer ([out, in], a Linear's weight) and is written
    // transposed, [count / R, R] ([in, out], a Conv1D's weight).
    size_t rows = 0;
  };
  std::vector<Piece> pieces;  // concatenated in order
  size_t count() const;
};

// The tensors of a model in export order; their pieces cover the flat
// parameter buffer exactly once.
std::vector<ExportTensor> export_tensors(const model::ModelConfig& config);

// Fills `out` with flat elements [flat_offset, flat_offset + out.size()).
// Called once per piece, in file order; `out` is the writer's buffer.
using PieceReader = std::function<void(size_t flat_offset, std::span<float> out)>;

// The largest piece of `tensors`, in elements. The writers stream through
// one buffer of min(largest piece, 1 Mi elements): a piece larger than that
// (GPT-2's wte) goes through it in slices, a transposed one in blocks of
// whole rows (plus one column of a block, the run written at a time).
size_t largest_piece(std::span<const ExportTensor> tensors);
inline constexpr size_t kExportSliceElements = size_t{1} << 20;  // 4 MiB

// `prefix` is prepended to every tensor name (e.g. "exp_avg." for optimizer
// state files; "" for weights). Returns the bytes of the buffers it streamed
// through. `slice_elements` bounds the buffer (tests make it small).
// `dtype` is the file's element type: fp32 ("F32", the default), bf16
// ("BF16") or fp16 ("F16"), each value rounded to nearest even once.
uint64_t write_safetensors(const std::string& path, std::span<const ExportTensor> tensors, const PieceReader& read,
                           const std::map<std::string, std::string>& metadata, const std::string& prefix = "",
                           size_t slice_elements = kExportSliceElements, Dtype dtype = Dtype::fp32());
// safetensors' name of a dtype: "F32", "BF16", "F16".
const char* safetensors_dtype_name(Dtype dtype);
// llm.c's model file (version 3, fp32). REQUIRES a gpt config. Returns as
// write_safetensors.
uint64_t write_llmc_model(const std::string& path, const model::GptConfig& config,
                          std::span<const ExportTensor> tensors, const PieceReader& read);

// The same from a flat copy of the Φ parameters (ShapeError when a piece
// reaches past it); the bytes written are identical.
uint64_t write_safetensors(const std::string& path, std::span<const ExportTensor> tensors, std::span<const float> flat,
                           const std::map<std::string, std::string>& metadata, const std::string& prefix = "",
                           size_t slice_elements = kExportSliceElements);
uint64_t write_llmc_model(const std::string& path, const model::GptConfig& config,
                          std::span<const ExportTensor> tensors, std::span<const float> flat);

}  // namespace zerodp::weights
