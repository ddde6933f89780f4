// SPDX-License-Identifier: Apache-2.0
// The process-level half of `zerodp train`: everything a run needs before any
// rank starts, read and checked once per process, so that a refused run has
// allocated and written nothing. In order: the resume checkpoint's settings
// (resume_config.h), mpirun detection, data defaults, ranks and batch,
// validation, the corpus, the model, the outputs (output_preflight.h), an
// --init-from file's header, and the data's fingerprint for the checkpoint. The per-rank half is rank_run.h.
// Thread-safety: called once, from the main thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ckpt/manifest.h"
#include "model/causal_lm.h"
#include "model/presets.h"
#include "train/corpus.h"
#include "train/resume_config.h"
#include "train/train_config.h"

namespace zerodp::train {

struct RunSetup {
  TrainConfig config;  // resolved: checkpoint settings, mpirun, data defaults, thread ranks and batch
  Corpus corpus;
  model::ModelConfig model_config;
  std::unique_ptr<model::Model> model;
  const model::CausalLm* lm = nullptr;  // *model, which is a language model
  // --resume: the checkpoint directory, its manifest and what the resume took
  // from it (printed once the checkpoint is loaded).
  std::string resume_path;
  std::optional<ckpt::Manifest> resumed;
  std::string resume_notes;
  DataFingerprint data_fingerprint;  // what a save records of the data; empty when nothing is saved
  bool held_out = false;             // rank 0 answers the held-out sums (embedded corpus)
  bool consolidate = false;          // rank 0 gathers one fp32 copy of the model (held-out sums or the sample)
  uint64_t load_scratch = 0;         // a resume's or --init-from's read buffer, for the memory plan
};

// ConfigError / InputFileError for anything that cannot work, before any
// rank starts.
RunSetup prepare_run(const TrainConfig& input);

}  // namespace zerodp::train
