// SPDX-License-Identifier: Apache-2.0
// Saving and loading a run's training state, seen through a TrainingState
// (ckpt/training_state.h; zero::Engine's is engine_ckpt/engine_checkpoint.h,
// which also has save/load overloads taking the engine). Both are collective
// (every rank calls them, with the same arguments) and work with any number
// of ranks on either backend.
//
// save(state, root): every rank writes its plan shard of every state
// tensor (fp32 master weights, optimizer moments) to its own file in
// ROOT/step-<steps>.tmp/ (temporary name, fsync, rename); after a barrier
// rank 0 writes the manifest last, renames the directory to
// ROOT/step-<steps>/, fsyncs, updates ROOT/latest atomically and rotates
// (keep_last). An interrupted save leaves every earlier checkpoint, and
// `latest`, as they were.
//
// load(state, path): path is a checkpoint directory or a root (its
// `latest`). Each rank reads exactly the elements its state holds — whole
// units at stage 0, its own shard at stages 1-3 — from the shard files that
// hold them, whatever N and stage saved them, verifying every chunk's CRC32C;
// then TrainingState::state_loaded sets the step counters and loss-scaler
// state.
// Errors: ConfigError for a different model, optimizer kind or state, a
// future format version or a path without a checkpoint; IoError for missing,
// truncated or corrupt files. Each names the file. On error every rank
// throws (the failing rank its error, the others PeerFailedError after it),
// and the state is unspecified: discard it.
// Thread-safety: one call per rank thread, on that rank's state.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "ckpt/format.h"
#include "ckpt/save_point.h"
#include "ckpt/training_state.h"
#include "core/stage.h"

namespace zerodp::ckpt {

struct SaveOptions {
  uint64_t seed = 0;  // the run's seed, recorded with the data position
  // The data position: the trainer's step counter, which counts skipped fp16
  // overflow steps too. -1 = the state's step counter. It names the
  // directory (step-<data_step>).
  int64_t data_step = -1;
  int keep_last = 0;                                             // keep this many newest checkpoints; 0 keeps all
  uint32_t chunk_bytes = kDefaultChunkBytes;                     // CRC granularity of the records
  std::map<std::string, std::string> metadata = {};              // recorded as-is (e.g. the data path)
  std::function<void(SavePoint point, int rank)> on_point = {};  // testing hook; may throw or kill
  // A save that fails only by write errors (IoError: a full disk, a
  // read-only filesystem) leaves the communicator whole, so the run can go
  // on: every rank throws an IoError (its own, or SaveFailedError for a
  // peer's), the partial step directory is removed as always. Any other
  // failure breaks the communicator as without it.
  bool survive_write_errors = false;
};

// What the ranks whose own writes succeeded throw when a peer's failed, in a
// save with survive_write_errors.
class SaveFailedError : public IoError {
 public:
  using IoError::IoError;
};

struct SaveResult {
  std::string path;  // ROOT/step-XXXXXXXX
  int64_t step = 0;
  uint64_t bytes_this_rank = 0;
  uint64_t bytes_total = 0;  // all shard files
  double seconds = 0.0;      // on this rank, save() start to end
};

SaveResult save(TrainingState& state, const std::string& root, const SaveOptions& options = {});

struct LoadResult {
  std::string path;          // the checkpoint directory actually loaded
  int64_t step = 0;          // the data position (SaveOptions::data_step): continue with this step
  int64_t engine_steps = 0;  // StepCounters::steps, as restored
  int64_t optimizer_steps = 0;
  uint64_t seed = 0;  // the seed it was saved with
  int saved_ranks = 0;
  Stage saved_stage = Stage::k0;
  std::string saved_dtype;
  std::map<std::string, std::string> metadata;
  double seconds = 0.0;
};

LoadResult load(TrainingState& state, const std::string& path);

}  // namespace zerodp::ckpt
