// SPDX-License-Identifier: Apache-2.0
// Resuming a run the way it was saved. A checkpoint records, beside the
// engine state, the settings that decide what is trained (the model, the
// data with its size and CRC-32C, the batch, the optimizer, the schedule,
// clipping, the seed and the run's steps). A resume takes each of them from
// the checkpoint unless the user gives it; a given value that contradicts
// the checkpoint is refused unless --resume-override names it. What may
// change freely: ranks, stage, precision, backend and everything that does
// not change the trajectory (overlap, prefetch, logging, evaluation, saves).
// Thread-safety: pure functions, except that they read the data file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ckpt/manifest.h"
#include "train/train_config.h"

namespace zerodp::train {

// The settings a checkpoint decides that --resume-override may change (by
// setting name: "data", "lr", ...); --steps is not among them: it may always grow.
std::vector<std::string> overridable_settings();

// The data's identity: the size and CRC-32C of its file, or of a glob's
// matches (data_files.h) read in their sorted order (empty path: the
// embedded corpus, nothing to read). ConfigError when a file cannot be read.
struct DataFingerprint {
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
};
DataFingerprint fingerprint_data(const std::string& path);

// The checkpoint metadata that records the run: "train_config" (JSON of the
// settings above, by setting name, and the micro-batches per step over the
// `ranks` that train), "build.<fact>" (run_facts.h: version, commit,
// compiler, SIMD level, CPU, OpenBLAS, MPI) and, for a data file,
// "data_bytes" and "data_crc32c". REQUIRES the batch resolved.
std::map<std::string, std::string> run_record(const TrainConfig& config, const DataFingerprint& data, int ranks);

// Applies the checkpoint's settings to `config` (before data defaults and
// the batch are resolved), checking given ones against it. ConfigError (one line: the setting, both
// values, how to keep the checkpoint's and how to override) on a
// contradiction; also when --steps leaves nothing to train. Returns notes
// for the log (what was taken, what was overridden).
std::string apply_checkpoint_config(TrainConfig& config, const ckpt::Manifest& manifest,
                                    const std::string& checkpoint_path);

// The data the checkpoint trained on must be the bytes it was saved with:
// ConfigError naming the file and both fingerprints unless --resume-override
// data; then a note for the log ("" when unchanged, or another data).
std::string check_saved_data(const TrainConfig& config, const ckpt::Manifest& manifest,
                             const std::string& checkpoint_path, const DataFingerprint& now);

}  // namespace zerodp::train
