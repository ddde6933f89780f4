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
// Each tensor is gathered from pieces of the flat parameter buffer, so both
// files are written straight from one flat copy, with no second one.
// Thread-safety: pure functions and file writes.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "model/presets.h"

namespace zerodp::ckpt {

struct ExportTensor {
  std::string name;
  std::vector<int64_t> shape;
  struct Piece {
    size_t offset = 0;  // in the flat buffer
    size_t count = 0;
  };
  std::vector<Piece> pieces;  // concatenated in order
  size_t count() const;
};

// The tensors of a model in export order; their pieces cover the flat
// parameter buffer exactly once.
std::vector<ExportTensor> export_tensors(const model::ModelConfig& config);

// `prefix` is prepended to every tensor name (e.g. "exp_avg." for optimizer
// state files; "" for weights).
void write_safetensors(const std::string& path, std::span<const ExportTensor> tensors, std::span<const float> flat,
                       const std::map<std::string, std::string>& metadata, const std::string& prefix = "");
// llm.c's model file (version 3, fp32). REQUIRES a gpt config.
void write_llmc_model(const std::string& path, const model::GptConfig& config, std::span<const ExportTensor> tensors,
                      std::span<const float> flat);

}  // namespace zerodp::ckpt
