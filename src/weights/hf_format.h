// SPDX-License-Identifier: Apache-2.0
// Hugging Face transformers' GPT-2 layout (GPT2LMHeadModel): the names,
// shapes and orientation of its safetensors weights and its config.json.
//
// Tensors (hf_gpt2_tensors), `prefix` + name (F32, or BF16/F16 as written):
//   wte.weight [V, C]             the real vocabulary: zerodp's padded rows
//                                 (ids V..Vp-1) are not written
//   wpe.weight [maxT, C]
//   h.<l>.ln_1.weight, h.<l>.ln_1.bias [C]
//   h.<l>.attn.c_attn.weight [C, 3C]   Conv1D: y = x @ W + b, W is [in, out],
//   h.<l>.attn.c_attn.bias [3C]        the transpose of zerodp's qkvw [3C, C];
//                                      q, k, v along the output, as zerodp's
//   h.<l>.attn.c_proj.weight [C, C], .bias [C]
//   h.<l>.ln_2.weight, h.<l>.ln_2.bias [C]
//   h.<l>.mlp.c_fc.weight [C, 4C], .bias [4C]
//   h.<l>.mlp.c_proj.weight [4C, C], .bias [C]
//   ln_f.weight, ln_f.bias [C]
// GPT2LMHeadModel's prefix is "transformer."; its lm_head.weight is tied to
// wte and not written (transformers drops it on save too). GPT2Model files
// (e.g. the Hub's gpt2) have no prefix; the reader takes either.
// The safetensors metadata is {"format": "pt"} only, so the file is a
// function of the weights: HF -> zerodp -> HF gives the same bytes.
// Thread-safety: pure functions and file writes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt_config.h"
#include "weights/hf_checkpoint.h"

namespace zerodp::weights {

inline constexpr const char* kHfPrefix = "transformer.";

// The tensors in file order; their pieces cover the flat buffer except wte's
// padded rows.
std::vector<ExportTensor> hf_gpt2_tensors(const model::GptConfig& config, const std::string& prefix = kHfPrefix);

// config.json for transformers' GPT2Config (model_type "gpt2", architectures
// ["GPT2LMHeadModel"], gelu_new = GELU's tanh form, layer_norm_epsilon 1e-5,
// tied embeddings, no dropout: zerodp trains without it; torch_dtype from
// `dtype`). Ends in a newline.
std::string hf_gpt2_config_json(const model::GptConfig& config, Dtype dtype = Dtype::fp32());

// Writes dir/config.json and dir/model.safetensors, or the shards and their
// index, in options.dtype (dir exists; hf_checkpoint.h); appends the files'
// names to `written`. Returns the bytes of the buffers the tensors streamed
// through.
uint64_t write_hf_gpt2(const std::string& dir, const model::GptConfig& config, const PieceReader& read,
                       const HfWriteOptions& options, std::vector<std::string>& written,
                       size_t slice_elements = kExportSliceElements);

// What a config.json beside an HF weights file says, checked against what
// zerodp computes (InputFileError naming the file and the key otherwise:
// another activation, epsilon, inner width, untied head...).
struct HfGpt2Config {
  int layers = 0, heads = 0, channels = 0, vocab = 0, positions = 0;
};
HfGpt2Config read_hf_gpt2_config(const std::string& path);

}  // namespace zerodp::weights
