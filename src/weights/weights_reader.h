// SPDX-License-Identifier: Apache-2.0
// The starting weights of `zerodp train --init-from`: a GPT's parameters
// from any of three file formats, told apart by content, never by name:
//   llm.c model file         int32 magic 20240326, fp32 (version 3)
//   zerodp safetensors       `ckpt consolidate`'s model.safetensors: llm.c's
//                            tensors stacked over layers (export_format.h)
//   Hugging Face GPT-2       safetensors with GPT2LMHeadModel's or GPT2Model's
//                            names (hf_format.h), config.json beside it or not
// Every reader checks the whole file's structure when it opens it (headers,
// names, dtypes F32, shapes, exact size: InputFileError naming the file and
// the problem), then compares the model it holds with --model's (ConfigError
// naming the file, what it holds and what --model says, with the --model
// that would fit). Fields a file does not record are taken from --model: the
// padded vocabulary of an HF file, the heads of an HF file without
// config.json (or of a zerodp file without its metadata).
// Then read() serves any flat range in zerodp's order (gpt_config.h), so each
// rank reads only the parameters it holds: contiguous tensors are read in
// place, a transposed HF Conv1D weight through a cache of whole rows of the
// flat matrix (at most 256 Ki elements, 1 MiB), and wte's padded rows, which
// an HF file lacks, are zeros.
// Thread-safety: one reader per thread (the cache).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "model/gpt_config.h"
#include "weights/init_weights.h"

namespace zerodp::weights {

enum class WeightsFormat { kLlmc, kZerodpSafetensors, kHfSafetensors };
const char* weights_format_name(WeightsFormat format);  // "llm.c model file", ...

class GptWeightsReader final : public InitWeights {
 public:
  // Opens and checks `path` (InputFileError) and that it holds `expected`
  // (ConfigError).
  GptWeightsReader(const std::string& path, const model::GptConfig& expected);
  ~GptWeightsReader();
  GptWeightsReader(const GptWeightsReader&) = delete;
  GptWeightsReader& operator=(const GptWeightsReader&) = delete;

  WeightsFormat format() const;
  const model::GptConfig& config() const;  // equals `expected`
  // "Hugging Face GPT-2 safetensors, with config.json", for the run's log.
  std::string description() const override;
  // Fills `out` with flat parameters [first, first + out.size()).
  void read(size_t first, std::span<float> out) override;
  // A Hugging Face file's transpose cache (blocks of whole rows of its
  // largest Conv1D matrix); llm.c and zerodp files are read in place (0).
  uint64_t scratch_bytes() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zerodp::weights
